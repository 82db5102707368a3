/**
 * A protocol-faithful fake of simplex-chat's WebSocket API (`simplex-chat -p PORT`), since no
 * simplex-chat can be installed here. Written from the bot API documentation in the simplex-chat
 * repository (bots/README.md, bots/api/COMMANDS.md, EVENTS.md, TYPES.md): text frames
 * `{"corrId","cmd"}` answered `{"corrId","resp":{"type",…}}` in command order, events
 * `{"resp":{…}}` without corrId, refusals as `chatCmdError` with a `chatError`. It models what the
 * connector uses: users (`/users`, `/_create user`, `/_user`), contact addresses with auto-accept
 * (`/_show_address`, `/_address`, `/_address_settings`), `/_send @<contactId>|#<groupId> json`
 * (as the active user: a contact of another user is not found), contacts connecting through an
 * address (`acceptingContactRequest`, `contactConnected`), received messages (`newChatItems`), and
 * groups (`/_group`, `/_add` as an invitation the contact accepts, `/_remove` and `/_member role` by
 * group member id, `/_members`, `/_get link`, `/_create link`) with their refusals.
 *
 * As the core does (`checkSameUser` in its Library/Commands.hs), a command that names a user id
 * (`/_show_address`, `/_address`, `/_address_settings`, `/_group`) acts only for the active user and
 * is refused with `differentActiveUser` for any other; `/_create user` makes the new user active and
 * `/_user <userId>` selects one.
 */
import { WebSocketServer, type WebSocket } from 'ws';

type FakeUser = { userId: number; displayName: string; address?: { connFullLink: string; connShortLink: string }; autoAccept: boolean };
type FakeContact = { contactId: number; userId: number; name: string };
type FakeMember = { groupMemberId: number; memberContactId?: number; memberRole: string; memberStatus: string };
type FakeGroup = { groupId: number; userId: number; name: string; members: FakeMember[]; link?: { connFullLink: string; connShortLink: string } };

const ROLE = '(owner|admin|moderator|member|observer)';
const GONE = new Set(['removed', 'left', 'deleted', 'rejected']);

export interface SimplexSent {
  readonly userId: number;
  readonly contactId?: number;
  readonly groupId?: number;
  readonly text: string;
}

const cmdError = (chatError: object) => ({ type: 'chatCmdError', chatError });
const storeError = (type: string, extra: object = {}) => cmdError({ type: 'errorStore', storeError: { type, ...extra } });
const chatError = (type: string, extra: object = {}) => cmdError({ type: 'error', errorType: { type, ...extra } });

export class FakeSimplexChat {
  readonly sent: SimplexSent[] = [];
  private readonly users = new Map<number, FakeUser>();
  private readonly contacts = new Map<number, FakeContact>();
  private readonly groups = new Map<number, FakeGroup>();
  private readonly clients = new Set<WebSocket>();
  private readonly sendFailures: string[] = [];
  private server: WebSocketServer | undefined;
  private activeUserId: number | undefined;
  /** Ids per table, as simplex-chat's own: a user, a contact, a group and a group member may share an id. */
  private readonly nextIds = { user: 1, contact: 1, group: 1, member: 1 };
  private nextItemId = 1;
  url = '';
  /** Connections that were ever opened. */
  connections = 0;
  /** What `/version` answers. */
  version = '6.4.5';

  async start(): Promise<this> {
    this.server = new WebSocketServer({ host: '127.0.0.1', port: 0 });
    await new Promise<void>((resolve) => this.server!.once('listening', () => resolve()));
    this.url = `ws://127.0.0.1:${(this.server.address() as { port: number }).port}`;
    this.server.on('connection', (socket) => {
      this.clients.add(socket);
      this.connections++;
      socket.on('close', () => this.clients.delete(socket));
      socket.on('message', (data) => this.onFrame(socket, data.toString()));
    });
    return this;
  }

  get listeners(): number {
    return this.clients.size;
  }

  userIdOfAddress(address: string): number | undefined {
    return [...this.users.values()].find((u) => u.address && (u.address.connShortLink === address || u.address.connFullLink === address))?.userId;
  }

  userNamed(displayName: string): FakeUser | undefined {
    return [...this.users.values()].find((u) => u.displayName === displayName);
  }

  /** As if someone connected through `address`: auto-accepted when the user asked for it. */
  connect(address: string, name: string): number {
    const userId = this.userIdOfAddress(address);
    const user = userId === undefined ? undefined : this.users.get(userId);
    if (!user?.autoAccept) throw new Error(`no auto-accepting address ${address}`);
    const contact = { contactId: this.nextIds.contact++, userId: user.userId, name };
    this.contacts.set(contact.contactId, contact);
    this.emit({ type: 'acceptingContactRequest', user: this.userJson(user), contact: this.contactJson(contact) });
    this.emit({ type: 'contactConnected', user: this.userJson(user), contact: this.contactJson(contact) });
    return contact.contactId;
  }

  /** A group of `userId`'s, whose members may write. */
  createGroup(userId: number): number {
    const groupId = this.nextIds.group++;
    this.groups.set(groupId, { groupId, userId, name: 'team', members: [] });
    return groupId;
  }

  group(groupId: number): FakeGroup | undefined {
    return this.groups.get(groupId);
  }

  /** As if the invited contact accepted the group invitation: `joinedGroupMember` to the bot. */
  acceptInvitation(groupId: number, contactId: number): void {
    const member = this.groups.get(groupId)?.members.find((m) => m.memberContactId === contactId && m.memberStatus === 'invited');
    if (!member) throw new Error(`contact ${contactId} has no invitation to group ${groupId}`);
    member.memberStatus = 'connected';
    const group = this.groups.get(groupId)!;
    this.emit({ type: 'joinedGroupMember', user: this.userJson(this.users.get(group.userId)!), groupInfo: this.groupInfo(group), member: this.memberJson(group, member) });
  }

  /** As if someone joined through the group's link (a member the bot has no contact for): `joinedGroupMember`. */
  memberJoinsByLink(groupId: number): number {
    const group = this.groups.get(groupId)!;
    const member: FakeMember = { groupMemberId: this.nextIds.member++, memberRole: 'member', memberStatus: 'connected' };
    group.members.push(member);
    this.emit({ type: 'joinedGroupMember', user: this.userJson(this.users.get(group.userId)!), groupInfo: this.groupInfo(group), member: this.memberJson(group, member) });
    return member.groupMemberId;
  }

  /** A contact of `userId`'s, as if they had connected through its address. */
  addContact(userId: number, name: string): number {
    const contact = { contactId: this.nextIds.contact++, userId, name };
    this.contacts.set(contact.contactId, contact);
    return contact.contactId;
  }

  /** A contact's text message to the user it is a contact of. */
  contactWrites(contactId: number, text: string, itemId = this.nextItemId++): void {
    const contact = this.contacts.get(contactId)!;
    const user = this.users.get(contact.userId)!;
    this.emit({
      type: 'newChatItems',
      user: this.userJson(user),
      chatItems: [{ chatInfo: { type: 'direct', contact: this.contactJson(contact) }, chatItem: this.item({ type: 'directRcv' }, text, itemId) }],
    });
  }

  /** A member's text message in a group (`memberContactId` when the user also has them as a contact). */
  memberWrites(groupId: number, member: { groupMemberId: number; memberContactId?: number }, text: string): void {
    const group = this.groups.get(groupId)!;
    const user = this.users.get(group.userId)!;
    const groupMember = { groupMemberId: member.groupMemberId, groupId, memberId: `m${member.groupMemberId}==`, memberRole: 'member', memberStatus: 'connected', localDisplayName: 'member', ...(member.memberContactId !== undefined ? { memberContactId: member.memberContactId } : {}) };
    this.emit({
      type: 'newChatItems',
      user: this.userJson(user),
      chatItems: [{ chatInfo: { type: 'group', groupInfo: { groupId, localDisplayName: 'team', groupProfile: { displayName: 'team', fullName: '' } } }, chatItem: this.item({ type: 'groupRcv', groupMember }, text, this.nextItemId++) }],
    });
  }

  /** The next `/_send` is refused with this error kind, e.g. `error/contactNotReady` or `errorStore/contactNotFound`. */
  failNextSend(kind: string): void {
    this.sendFailures.push(kind);
  }

  writeRaw(frame: string): void {
    for (const socket of this.clients) socket.send(frame);
  }

  dropConnections(): void {
    for (const socket of this.clients) socket.terminate();
    // They stop counting as listeners at once, not when their 'close' events come (fake-signal-cli.ts does the same).
    this.clients.clear();
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private emit(resp: object): void {
    for (const socket of this.clients) socket.send(JSON.stringify({ resp }));
  }

  private item(chatDir: object, text: string, itemId: number) {
    const at = new Date(1_700_000_000_000 + itemId * 1000).toISOString();
    return {
      chatDir,
      meta: { itemId, itemTs: at, itemText: text, itemStatus: { type: 'rcvNew' }, itemEdited: false, userMention: false, deletable: true, editable: false, showGroupAsSender: false, createdAt: at, updatedAt: at },
      content: { type: 'rcvMsgContent', msgContent: { type: 'text', text } },
      mentions: {},
      reactions: [],
    };
  }

  private userJson(user: FakeUser) {
    return { userId: user.userId, agentUserId: user.userId, userContactId: user.userId, localDisplayName: user.displayName, profile: { profileId: user.userId, displayName: user.displayName, fullName: '', peerType: 'bot', localAlias: '' }, activeUser: user.userId === this.activeUserId, activeOrder: user.userId, showNtfs: true };
  }

  private contactJson(contact: FakeContact) {
    return { contactId: contact.contactId, localDisplayName: contact.name, profile: { profileId: 100 + contact.contactId, displayName: contact.name, fullName: '', localAlias: '' }, contactUsed: true, contactStatus: 'active' };
  }

  private onFrame(socket: WebSocket, text: string): void {
    let request: { corrId?: unknown; cmd?: unknown };
    try {
      request = JSON.parse(text) as typeof request;
    } catch {
      request = {};
    }
    if (typeof request.corrId !== 'string' || typeof request.cmd !== 'string') {
      socket.send(JSON.stringify({ resp: chatError('commandError', { message: 'invalid request' }) }));
      return;
    }
    socket.send(JSON.stringify({ corrId: request.corrId, resp: this.answer(request.cmd) }));
  }

  /** The user a command names, when it is the active one (the core's checkSameUser), or the refusal. */
  private sameUser(id: string): FakeUser | object {
    const found = this.users.get(Number(id));
    if (!found) return storeError('userNotFound', { userId: Number(id) });
    if (found.userId !== this.activeUserId) return chatError('differentActiveUser', { commandUserId: found.userId, activeUserId: this.activeUserId ?? 0 });
    return found;
  }

  private answer(cmd: string): object {
    const user = (id: string) => this.users.get(Number(id));
    const isUser = (value: FakeUser | object): value is FakeUser => 'userId' in value && 'displayName' in value;
    let m: RegExpExecArray | null;
    if (cmd === '/version') return { type: 'versionInfo', versionInfo: { version: this.version, simplexmqVersion: '6.4.4', simplexmqCommit: 'fake' }, chatMigrations: [], agentMigrations: [] };
    if (cmd === '/users') return { type: 'usersList', users: [...this.users.values()].map((u) => ({ user: this.userJson(u), unreadCount: 0 })) };
    if ((m = /^\/_create user (.+)$/.exec(cmd))) {
      const profile = (JSON.parse(m[1]!) as { profile?: { displayName?: string } }).profile;
      const name = profile?.displayName ?? '';
      if (!/^[^\s#@'"]+$/.test(name)) return chatError('invalidDisplayName', { displayName: name, validName: name.replace(/[\s#@'"]/g, '_') });
      if (this.userNamed(name)) return chatError('userExists', { contactName: name });
      const created: FakeUser = { userId: this.nextIds.user++, displayName: name, autoAccept: false };
      this.users.set(created.userId, created);
      this.activeUserId = created.userId;
      return { type: 'activeUser', user: this.userJson(created) };
    }
    if ((m = /^\/_user (\d+)$/.exec(cmd))) {
      const found = user(m[1]!);
      if (!found) return storeError('userNotFound', { userId: Number(m[1]) });
      this.activeUserId = found.userId;
      return { type: 'activeUser', user: this.userJson(found) };
    }
    if ((m = /^\/_show_address (\d+)$/.exec(cmd))) {
      const found = this.sameUser(m[1]!);
      if (!isUser(found)) return found;
      if (!found.address) return storeError('userContactLinkNotFound');
      return { type: 'userContactLink', user: this.userJson(found), contactLink: { userContactLinkId: found.userId, connLinkContact: found.address, shortLinkDataSet: true, shortLinkLargeDataSet: false, addressSettings: { businessAddress: false, ...(found.autoAccept ? { autoAccept: { acceptIncognito: false } } : {}) } } };
    }
    if ((m = /^\/_address (\d+)$/.exec(cmd))) {
      const found = this.sameUser(m[1]!);
      if (!isUser(found)) return found;
      found.address = { connFullLink: `simplex:/contact#/?v=2-7&smp=smp%3A%2F%2Ffake%40127.0.0.1%2Fu${found.userId}`, connShortLink: `https://smp.fake.example/a#u${found.userId}${Math.random().toString(36).slice(2, 10)}` };
      return { type: 'userContactLinkCreated', user: this.userJson(found), connLinkContact: found.address };
    }
    if ((m = /^\/_address_settings (\d+) (.+)$/.exec(cmd))) {
      const found = this.sameUser(m[1]!);
      if (!isUser(found)) return found;
      found.autoAccept = (JSON.parse(m[2]!) as { autoAccept?: unknown }).autoAccept !== undefined;
      return { type: 'userContactLinkUpdated', user: this.userJson(found), contactLink: { connLinkContact: found.address } };
    }
    if ((m = /^\/_send ([@#])(\d+)(?: live=(?:on|off))? json (.+)$/.exec(cmd))) {
      const active = this.activeUserId === undefined ? undefined : this.users.get(this.activeUserId);
      if (!active) return chatError('noActiveUser');
      const failure = this.sendFailures.shift();
      if (failure) {
        const [kind, type] = failure.split('/');
        return kind === 'errorStore' ? storeError(type!) : chatError(type!);
      }
      const id = Number(m[2]);
      const messages = JSON.parse(m[3]!) as Array<{ msgContent?: { type?: string; text?: string } }>;
      if (m[1] === '@') {
        const contact = this.contacts.get(id);
        if (!contact || contact.userId !== active.userId) return storeError('contactNotFound', { contactId: id });
      } else {
        const group = this.groups.get(id);
        if (!group || group.userId !== active.userId) return storeError('groupNotFound', { groupId: id });
      }
      for (const message of messages) this.sent.push({ userId: active.userId, ...(m[1] === '@' ? { contactId: id } : { groupId: id }), text: message.msgContent?.text ?? '' });
      return { type: 'newChatItems', user: this.userJson(active), chatItems: [] };
    }
    const groupAnswer = this.answerGroup(cmd);
    if (groupAnswer) return groupAnswer;
    return chatError('commandError', { message: `unknown command: ${cmd.split(' ')[0]}` });
  }

  private groupInfo(group: FakeGroup) {
    return { groupId: group.groupId, localDisplayName: group.name, groupProfile: { displayName: group.name, fullName: '' }, membership: { groupMemberId: 0, memberRole: 'owner', memberStatus: 'creator' } };
  }

  private memberJson(group: FakeGroup, member: FakeMember) {
    const contact = member.memberContactId === undefined ? undefined : this.contacts.get(member.memberContactId);
    return { ...member, groupId: group.groupId, memberId: `m${member.groupMemberId}==`, memberCategory: 'invitee', localDisplayName: contact?.name ?? 'member', memberProfile: { displayName: contact?.name ?? 'member', fullName: '' } };
  }

  /** The group commands, as the active user (a group of another user is not found); `/_group` names its user. */
  private answerGroup(cmd: string): object | undefined {
    let m: RegExpExecArray | null;
    const active = this.activeUserId === undefined ? undefined : this.users.get(this.activeUserId);
    const ofActive = (id: string) => {
      const group = this.groups.get(Number(id));
      return group && group.userId === active?.userId ? group : undefined;
    };
    if ((m = /^\/_group (\d+) (.+)$/.exec(cmd))) {
      const owner = this.sameUser(m[1]!);
      if (!('userId' in owner && 'displayName' in owner)) return owner;
      const name = String((JSON.parse(m[2]!) as { displayName?: unknown }).displayName ?? '');
      // The core's mkValidName: at most 50 characters, a first character that is a letter, digit or
      // symbol, at most 3 punctuation characters in a row, no spaces at either end.
      const valid = name !== '' && name.trim() === name && Array.from(name).length <= 50 && /^[\p{L}\p{N}\p{S}]/u.test(name) && !/\p{P}{4}/u.test(name);
      if (!valid) return chatError('invalidDisplayName', { displayName: name, validName: name.trim() });
      const group: FakeGroup = { groupId: this.nextIds.group++, userId: owner.userId, name, members: [] };
      this.groups.set(group.groupId, group);
      return { type: 'groupCreated', user: this.userJson(owner), groupInfo: this.groupInfo(group) };
    }
    if ((m = new RegExp(`^/_add #(\\d+) (\\d+) ${ROLE}$`).exec(cmd))) {
      const group = ofActive(m[1]!);
      if (!group) return storeError('groupNotFound', { groupId: Number(m[1]) });
      const contact = this.contacts.get(Number(m[2]));
      if (!contact || contact.userId !== active!.userId) return storeError('contactNotFound', { contactId: Number(m[2]) });
      let member = group.members.find((x) => x.memberContactId === contact.contactId && !GONE.has(x.memberStatus));
      if (member && member.memberStatus !== 'invited') return chatError('groupDuplicateMember', { contactName: contact.name });
      if (!member) group.members.push((member = { groupMemberId: this.nextIds.member++, memberContactId: contact.contactId, memberRole: m[3]!, memberStatus: 'invited' }));
      return { type: 'sentGroupInvitation', user: this.userJson(active!), groupInfo: this.groupInfo(group), contact: this.contactJson(contact), member: this.memberJson(group, member) };
    }
    if ((m = /^\/_remove #(\d+) ([\d,]+)( messages=on)?$/.exec(cmd))) {
      const group = ofActive(m[1]!);
      if (!group) return storeError('groupNotFound', { groupId: Number(m[1]) });
      const chosen = m[2]!.split(',').map((id) => group.members.find((x) => x.groupMemberId === Number(id) && !GONE.has(x.memberStatus)));
      if (chosen.some((x) => !x)) return chatError('groupMemberNotFound');
      for (const member of chosen) member!.memberStatus = 'removed';
      return { type: 'userDeletedMembers', user: this.userJson(active!), groupInfo: this.groupInfo(group), members: chosen.map((x) => this.memberJson(group, x!)), withMessages: m[3] !== undefined };
    }
    if ((m = new RegExp(`^/_member role #(\\d+) ([\\d,]+) ${ROLE}$`).exec(cmd))) {
      const group = ofActive(m[1]!);
      if (!group) return storeError('groupNotFound', { groupId: Number(m[1]) });
      const chosen = m[2]!.split(',').map((id) => group.members.find((x) => x.groupMemberId === Number(id) && !GONE.has(x.memberStatus)));
      if (chosen.some((x) => !x)) return chatError('groupMemberNotFound');
      for (const member of chosen) member!.memberRole = m[3]!;
      return { type: 'membersRoleUser', user: this.userJson(active!), groupInfo: this.groupInfo(group), members: chosen.map((x) => this.memberJson(group, x!)), toRole: m[3] };
    }
    if ((m = /^\/_members #(\d+)$/.exec(cmd))) {
      const group = ofActive(m[1]!);
      if (!group) return storeError('groupNotFound', { groupId: Number(m[1]) });
      return { type: 'groupMembers', user: this.userJson(active!), group: { groupInfo: this.groupInfo(group), members: group.members.map((x) => this.memberJson(group, x)) } };
    }
    if ((m = /^\/_get link #(\d+)$/.exec(cmd))) {
      const group = ofActive(m[1]!);
      if (!group) return storeError('groupNotFound', { groupId: Number(m[1]) });
      if (!group.link) return storeError('groupLinkNotFound', { groupInfo: this.groupInfo(group) });
      return { type: 'groupLink', user: this.userJson(active!), groupInfo: this.groupInfo(group), groupLink: { userContactLinkId: group.groupId, connLinkContact: group.link, acceptMemberRole: 'member' } };
    }
    if ((m = /^\/_create link #(\d+)(?: (\w+))?$/.exec(cmd))) {
      const group = ofActive(m[1]!);
      if (!group) return storeError('groupNotFound', { groupId: Number(m[1]) });
      if (m[2] !== undefined && m[2] !== 'member' && m[2] !== 'observer') return chatError('groupMemberInitialRole', { groupInfo: this.groupInfo(group), initialRole: m[2] });
      if (group.link) return chatError('groupLinkAlreadyExists' as string);
      group.link = { connFullLink: `simplex:/contact#/?v=2-7&smp=smp%3A%2F%2Ffake%40127.0.0.1%2Fg${group.groupId}`, connShortLink: `https://smp.fake.example/g#g${group.groupId}${Math.random().toString(36).slice(2, 10)}` };
      return { type: 'groupLinkCreated', user: this.userJson(active!), groupInfo: this.groupInfo(group), groupLink: { userContactLinkId: group.groupId, connLinkContact: group.link, acceptMemberRole: m[2] ?? 'member' } };
    }
    return undefined;
  }
}
