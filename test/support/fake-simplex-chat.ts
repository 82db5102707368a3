/**
 * A protocol-faithful fake of simplex-chat's WebSocket API (`simplex-chat -p PORT`), since no
 * simplex-chat can be installed here. Written from the bot API documentation in the simplex-chat
 * repository (bots/README.md, bots/api/COMMANDS.md, EVENTS.md, TYPES.md): text frames
 * `{"corrId","cmd"}` answered `{"corrId","resp":{"type",…}}` in command order, events
 * `{"resp":{…}}` without corrId, refusals as `chatCmdError` with a `chatError`. It models what the
 * connector uses: users (`/users`, `/_create user`, `/_user`), contact addresses with auto-accept
 * (`/_show_address`, `/_address`, `/_address_settings`), `/_send @<contactId>|#<groupId> json`
 * (as the active user: a contact of another user is not found), contacts connecting through an
 * address (`acceptingContactRequest`, `contactConnected`), and received messages (`newChatItems`).
 */
import { WebSocketServer, type WebSocket } from 'ws';

type FakeUser = { userId: number; displayName: string; address?: { connFullLink: string; connShortLink: string }; autoAccept: boolean };
type FakeContact = { contactId: number; userId: number; name: string };

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
  private readonly groups = new Map<number, { groupId: number; userId: number }>();
  private readonly clients = new Set<WebSocket>();
  private readonly sendFailures: string[] = [];
  private server: WebSocketServer | undefined;
  private activeUserId: number | undefined;
  private nextId = 1;
  private nextItemId = 1;
  url = '';
  /** Connections that were ever opened. */
  connections = 0;

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
    const contact = { contactId: this.nextId++, userId: user.userId, name };
    this.contacts.set(contact.contactId, contact);
    this.emit({ type: 'acceptingContactRequest', user: this.userJson(user), contact: this.contactJson(contact) });
    this.emit({ type: 'contactConnected', user: this.userJson(user), contact: this.contactJson(contact) });
    return contact.contactId;
  }

  /** A group of `userId`'s, whose members may write. */
  createGroup(userId: number): number {
    const groupId = this.nextId++;
    this.groups.set(groupId, { groupId, userId });
    return groupId;
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

  private answer(cmd: string): object {
    const user = (id: string) => this.users.get(Number(id));
    let m: RegExpExecArray | null;
    if (cmd === '/users') return { type: 'usersList', users: [...this.users.values()].map((u) => ({ user: this.userJson(u), unreadCount: 0 })) };
    if ((m = /^\/_create user (.+)$/.exec(cmd))) {
      const profile = (JSON.parse(m[1]!) as { profile?: { displayName?: string } }).profile;
      const name = profile?.displayName ?? '';
      if (!/^[^\s#@'"]+$/.test(name)) return chatError('invalidDisplayName', { displayName: name, validName: name.replace(/[\s#@'"]/g, '_') });
      if (this.userNamed(name)) return chatError('userExists', { contactName: name });
      const created: FakeUser = { userId: this.nextId++, displayName: name, autoAccept: false };
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
      const found = user(m[1]!);
      if (!found) return storeError('userNotFound', { userId: Number(m[1]) });
      if (!found.address) return storeError('userContactLinkNotFound');
      return { type: 'userContactLink', user: this.userJson(found), contactLink: { userContactLinkId: found.userId, connLinkContact: found.address, shortLinkDataSet: true, shortLinkLargeDataSet: false, addressSettings: { businessAddress: false, ...(found.autoAccept ? { autoAccept: { acceptIncognito: false } } : {}) } } };
    }
    if ((m = /^\/_address (\d+)$/.exec(cmd))) {
      const found = user(m[1]!);
      if (!found) return storeError('userNotFound', { userId: Number(m[1]) });
      found.address = { connFullLink: `simplex:/contact#/?v=2-7&smp=smp%3A%2F%2Ffake%40127.0.0.1%2Fu${found.userId}`, connShortLink: `https://smp.fake.example/a#u${found.userId}${Math.random().toString(36).slice(2, 10)}` };
      return { type: 'userContactLinkCreated', user: this.userJson(found), connLinkContact: found.address };
    }
    if ((m = /^\/_address_settings (\d+) (.+)$/.exec(cmd))) {
      const found = user(m[1]!);
      if (!found) return storeError('userNotFound', { userId: Number(m[1]) });
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
    return chatError('commandError', { message: `unknown command: ${cmd.split(' ')[0]}` });
  }
}
