/**
 * The groups of the fake signal-cli daemon: `updateGroup` and `listGroups` as signal-cli 0.13
 * answers them (src/main/java/org/asamk/signal/commands/UpdateGroupCommand.java and
 * ListGroupsCommand.java; research in docs/messengers.md):
 * - params by their camelCase names, lists under the singular or the plural key;
 * - no `groupId`: a new group (base64 of 32 bytes) whose creator is member and admin, answered
 *   `{groupId, timestamp, results}`; a change answers `{timestamp, results}`, no change `{}`;
 * - an unknown group: error -1 `Group not found: <id>`; a malformed one: -1 `Invalid group id: …`;
 *   an unregistered number: -1 `The user <number> is not registered.`; bad syntax: -1 `Invalid
 *   phone number '<s>': …`; a change by an account that is not admin: -32603 from the group server;
 * - removing someone who is not in the group changes nothing, without an error;
 * - `listGroups` filters by `groupId`/`groupIds` (unknown ids skipped), members as `{number, uuid}`,
 *   the bot itself among members and admins, `groupInviteLink` null until the link is turned on.
 */
import { randomBytes, randomUUID } from 'node:crypto';

interface FakeGroup {
  readonly id: string;
  readonly account: string;
  name: string;
  readonly members: Set<string>;
  readonly pending: Set<string>;
  readonly admins: Set<string>;
  link: string | null;
}

export type Answer = { result: unknown } | { error: { code: number; message: string } };

const listOf = (params: Record<string, unknown>, singular: string): string[] | undefined => {
  const value = params[singular] ?? params[`${singular}s`];
  if (value === undefined) return undefined;
  return ([] as unknown[]).concat(value).map(String);
};

const GROUP_ID = /^[A-Za-z0-9+/]{43}=$/;

export class FakeSignalGroups {
  private readonly groups = new Map<string, FakeGroup>();
  private readonly uuids = new Map<string, string>();
  private readonly unregistered = new Set<string>();
  /** Groups where the bot's account lost its admin rights (changes are refused by the group server). */
  private readonly notAdmin = new Set<string>();
  private clock = 1_700_000_000_000;

  markUnregistered(number: string): void {
    this.unregistered.add(number);
  }

  revokeAdmin(groupId: string): void {
    this.notAdmin.add(groupId);
  }

  /** As if the contact followed the invite link, or accepted (Signal: joined at once). */
  join(groupId: string, member: string): void {
    this.groups.get(groupId)?.members.add(member);
  }

  group(groupId: string): FakeGroup | undefined {
    return this.groups.get(groupId);
  }

  private uuidOf(member: string): string {
    if (!member.startsWith('+')) return member;
    let uuid = this.uuids.get(member);
    if (!uuid) this.uuids.set(member, (uuid = randomUUID()));
    return uuid;
  }

  private address(member: string) {
    return member.startsWith('+') ? { number: member, uuid: this.uuidOf(member) } : { number: null, uuid: member };
  }

  /** A member string as signal-cli reads it, or the error it answers. */
  private resolve(member: string): { member: string } | Answer {
    if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(member)) return { member: member.toLowerCase() };
    if (!/^\+\d{7,15}$/.test(member)) return { error: { code: -1, message: `Invalid phone number '${member}': The string supplied is too short to be a phone number.` } };
    if (this.unregistered.has(member)) return { error: { code: -1, message: `The user ${member} is not registered.` } };
    return { member };
  }

  updateGroup(account: string, params: Record<string, unknown>): Answer {
    let group: FakeGroup;
    let created = false;
    if (params.groupId === undefined) {
      group = { id: randomBytes(32).toString('base64'), account, name: String(params.name ?? ''), members: new Set([account]), pending: new Set(), admins: new Set([account]), link: null };
      this.groups.set(group.id, group);
      created = true;
    } else {
      const id = String(params.groupId);
      if (!GROUP_ID.test(id)) return { error: { code: -1, message: `Invalid group id: Failed to decode groupId (must be base64) "${id}": bad length` } };
      const found = this.groups.get(id);
      if (!found || found.account !== account) return { error: { code: -1, message: `Group not found: ${id}` } };
      group = found;
    }
    const changes: Array<() => void> = [];
    for (const [key, apply] of [
      ['member', (m: string) => group.members.add(m)],
      ['removeMember', (m: string) => (group.members.delete(m), group.pending.delete(m), group.admins.delete(m))],
      ['admin', (m: string) => group.admins.add(m)],
      ['removeAdmin', (m: string) => group.admins.delete(m)],
    ] as const) {
      for (const raw of listOf(params, key) ?? []) {
        const resolved = this.resolve(raw);
        if ('error' in resolved) return resolved;
        if ('member' in resolved) {
          if (key === 'admin' && !group.members.has(resolved.member))
            return { error: { code: -32603, message: 'Failed to send message: Group patch not accepted (GroupPatchNotAcceptedException) (UnexpectedErrorException)' } };
          changes.push(() => apply(resolved.member));
        }
      }
    }
    if (params.link === 'enabled' && group.link === null) changes.push(() => (group.link = `https://signal.group/#${randomBytes(24).toString('base64url')}`));
    if (!created && changes.length > 0 && this.notAdmin.has(group.id))
      return { error: { code: -32603, message: 'Failed to send message: Authorization failed! (AuthorizationFailedException) (UnexpectedErrorException)' } };
    for (const change of changes) change();
    const timestamp = ++this.clock;
    if (created) return { result: { groupId: group.id, timestamp, results: [] } };
    return { result: changes.length > 0 ? { timestamp, results: [] } : {} };
  }

  listGroups(account: string, params: Record<string, unknown>): Answer {
    const ids = listOf(params, 'groupId');
    const groups = [...this.groups.values()].filter((g) => g.account === account && (!ids || ids.includes(g.id)));
    return {
      result: groups.map((g) => ({
        id: g.id,
        name: g.name,
        description: null,
        isMember: true,
        isBlocked: false,
        messageExpirationTime: 0,
        members: [...g.members].map((m) => this.address(m)),
        pendingMembers: [...g.pending].map((m) => this.address(m)),
        requestingMembers: [],
        admins: [...g.admins].map((m) => this.address(m)),
        banned: [],
        permissionAddMember: 'EVERY_MEMBER',
        permissionEditDetails: 'EVERY_MEMBER',
        permissionSendMessage: 'EVERY_MEMBER',
        groupInviteLink: g.link,
      })),
    };
  }
}
