import { z } from 'zod';
import { checkGroupContact } from '../messenger-rules.ts';
import { GroupOperationError, type GroupAdministration, type GroupMember, type GroupRole } from '../port.ts';
import { SimplexCommandError, type SimplexResponse } from './simplex-client.ts';
import { MEMBER_PREFIX, memberContactIdOf } from './chat-items.ts';

/**
 * SimpleX groups through simplex-chat's bot API (bots/api/COMMANDS.md): `/_group <userId> <profile>`
 * makes one, `/_add #<groupId> <contactId> member` invites a contact of the bot (they join once they
 * accept), `/_remove` and `/_member role` take group member ids (found with `/_members`), and the
 * invite link is `/_get link` or `/_create link … member`. Every `#<groupId>` command runs as the
 * active user, so each operation switches to the bot's user first, as one step with it.
 *
 * A member's contact id is the contact id the bot has for them (`memberContactId`), else
 * `member-<groupMemberId>`: the same ids inbound group messages carry. Only a contact can be added.
 */
export type RunAsUser = <T>(from: string, work: (command: (cmd: string) => Promise<SimplexResponse>, userId: number) => Promise<T>) => Promise<T>;

const memberSchema = z
  .object({
    groupMemberId: z.number(),
    memberContactId: z.number().nullable().optional(),
    memberRole: z.string(),
    memberStatus: z.string(),
  })
  .passthrough();
type SimplexMember = z.infer<typeof memberSchema>;

/** Statuses of someone who is no longer in the group. */
const GONE = new Set(['removed', 'left', 'deleted', 'rejected']);
/** Statuses of someone asked to join who has not yet: invited, or waiting for an admin. */
const NOT_YET = new Set(['invited', 'pending_approval', 'pending_review']);
const ADMIN_ROLES = new Set(['admin', 'owner']);

const NOT_A_MEMBER = 'Contact is not a member of the group';

const REFUSALS: Record<string, string> = {
  'errorStore/groupNotFound': 'Group not found',
  'errorStore/contactNotFound': "The contact is not a contact of the bot's SimpleX user",
  'error/groupUserRole': 'The bot is not an admin of the group',
  'error/groupMemberNotFound': NOT_A_MEMBER,
  'error/groupNotJoined': "The bot's SimpleX user has not joined the group",
  'error/groupMemberUserRemoved': "The bot's SimpleX user was removed from the group",
  'error/groupMemberNotActive': "The bot's SimpleX user is not active in the group",
  'error/contactNotActive': 'The contact is no longer active',
  'error/invalidDisplayName': 'simplex-chat refused the group name',
};

/** What a refusal of simplex-chat means (reasons never hold an id); the agent's errors (network, servers) and a contact still connecting may pass. */
export const groupRefusalOf = (error: SimplexCommandError): GroupOperationError =>
  new GroupOperationError(REFUSALS[error.kind] ?? `simplex-chat refused the group change (${error.kind})`, !(error.kind === 'error/contactNotReady' || error.kind.startsWith('errorAgent/')));

/**
 * A display name simplex-chat takes (its `mkValidName`, notes/messenger-daemons.md): spaces, `#`,
 * `@` and quotes made `_`; a first character that is a letter, a digit or a symbol; at most 3
 * punctuation characters in a row; at most 50 characters. An app's name that keeps nothing gets
 * `Relay_group`.
 */
export const groupDisplayName = (name: string): string => {
  const valid = Array.from(name.trim().replace(/[\s#@'"]+/g, '_'))
    .join('')
    .replace(/^[^\p{L}\p{N}\p{S}]+/u, '')
    .replace(/(\p{P}{3})\p{P}+/gu, '$1');
  const cut = Array.from(valid).slice(0, 50).join('');
  return cut === '' ? 'Relay_group' : cut;
};

const linkOf = (resp: SimplexResponse): string | undefined => {
  // Newer cores nest the link in `groupLink`; older ones put `connLinkContact` beside it.
  const holder = (resp.groupLink as { connLinkContact?: unknown } | undefined)?.connLinkContact ?? resp.connLinkContact;
  const link = holder as { connShortLink?: string | null; connFullLink?: string } | undefined;
  return link?.connShortLink ?? link?.connFullLink ?? undefined;
};

const contactIdOf = (m: SimplexMember) => memberContactIdOf(m);

export class SimplexGroups implements GroupAdministration {
  constructor(private readonly asUser: RunAsUser) {}

  async createGroup(from: string, name: string): Promise<string> {
    const resp = await this.run(from, (command, userId) => command(`/_group ${userId} ${JSON.stringify({ displayName: groupDisplayName(name), fullName: '' })}`));
    const groupId = (resp.groupInfo as { groupId?: unknown } | undefined)?.groupId;
    if (typeof groupId !== 'number') throw new GroupOperationError(`simplex-chat answered a new group with ${resp.type}`, false);
    return String(groupId);
  }

  async addMember(from: string, groupId: string, contactId: string): Promise<void> {
    checkGroupContact('simplex', contactId);
    if (contactId.startsWith(MEMBER_PREFIX)) throw new GroupOperationError('Only a contact of the bot can be added to the group: a group member without a direct contact cannot');
    await this.run(from, async (command) => {
      const members = await this.list(command, groupId);
      const existing = members.find((m) => contactIdOf(m) === contactId && !GONE.has(m.memberStatus));
      if (existing && existing.memberStatus !== 'invited') return; // in already
      await command(`/_add #${checkGroup(groupId)} ${contactId} member`);
    });
  }

  async removeMember(from: string, groupId: string, contactId: string): Promise<void> {
    checkGroupContact('simplex', contactId);
    await this.run(from, async (command) => {
      const member = this.find(await this.list(command, groupId), contactId);
      await command(`/_remove #${groupId} ${member.groupMemberId}`);
    });
  }

  async setRole(from: string, groupId: string, contactId: string, role: GroupRole): Promise<void> {
    checkGroupContact('simplex', contactId);
    await this.run(from, async (command) => {
      const member = this.find(await this.list(command, groupId), contactId);
      if (ADMIN_ROLES.has(member.memberRole) === (role === 'admin')) return;
      await command(`/_member role #${groupId} ${member.groupMemberId} ${role}`);
    });
  }

  async inviteLink(from: string, groupId: string): Promise<string> {
    return this.run(from, async (command) => {
      let resp: SimplexResponse;
      try {
        resp = await command(`/_get link #${checkGroup(groupId)}`);
      } catch (error) {
        if (!(error instanceof SimplexCommandError) || error.kind !== 'errorStore/groupLinkNotFound') throw error;
        resp = await command(`/_create link #${groupId} member`);
      }
      const link = linkOf(resp);
      if (!link) throw new GroupOperationError(`simplex-chat answered the group link with ${resp.type} and no link`, false);
      return link;
    });
  }

  async members(from: string, groupId: string): Promise<GroupMember[]> {
    return this.run(from, async (command) =>
      (await this.list(command, groupId))
        .filter((m) => !GONE.has(m.memberStatus))
        .map((m) => ({ contactId: contactIdOf(m), role: ADMIN_ROLES.has(m.memberRole) ? 'admin' : 'member', status: NOT_YET.has(m.memberStatus) ? 'invited' : 'joined' })),
    );
  }

  private find(members: readonly SimplexMember[], contactId: string): SimplexMember {
    const member = members.find((m) => contactIdOf(m) === contactId && !GONE.has(m.memberStatus));
    if (!member) throw new GroupOperationError(NOT_A_MEMBER);
    return member;
  }

  private async list(command: (cmd: string) => Promise<SimplexResponse>, groupId: string): Promise<SimplexMember[]> {
    const resp = await command(`/_members #${checkGroup(groupId)}`);
    const members = z.array(memberSchema).safeParse((resp.group as { members?: unknown } | undefined)?.members);
    if (!members.success) throw new GroupOperationError(`simplex-chat answered the members with ${resp.type} of unexpected shape`, false);
    return members.data;
  }

  private async run<T>(from: string, work: (command: (cmd: string) => Promise<SimplexResponse>, userId: number) => Promise<T>): Promise<T> {
    try {
      return await this.asUser(from, work);
    } catch (error) {
      if (error instanceof SimplexCommandError) throw groupRefusalOf(error);
      throw error;
    }
  }
}

/** A SimpleX group id is a number; anything else is no group of the bot's. */
const checkGroup = (groupId: string): string => {
  if (!/^\d{1,19}$/.test(groupId)) throw new GroupOperationError('Group not found');
  return groupId;
};
