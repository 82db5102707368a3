import { z } from 'zod';
import { checkGroupContact, contactRejectionOf } from '../messenger-rules.ts';
import { GroupOperationError, type GroupAdministration, type GroupMember, type GroupRole } from '../port.ts';
import { recipientOf } from './recipients.ts';
import { SIGNAL_ERROR_CODES, SignalDaemonError, SignalDaemonUnavailableError, type SignalRpc } from './signal-rpc.ts';

/**
 * Signal groups through signal-cli's `updateGroup` (create, add and remove members, add and remove
 * admins, turn the invite link on) and `listGroups` (members, admins, pending members, the link).
 * signal-cli checks nothing of admin rights itself (Signal's group server refuses the change), and
 * removing someone who is not in the group changes nothing without an error: membership is read
 * first, so that such a request gets the contract's refusal.
 */
const address = z.object({ number: z.string().nullable().optional(), uuid: z.string().nullable().optional() }).passthrough();
const groupSchema = z
  .object({
    id: z.string(),
    isMember: z.boolean().optional(),
    members: z.array(address).default([]),
    pendingMembers: z.array(address).default([]),
    admins: z.array(address).default([]),
    groupInviteLink: z.string().nullable().optional(),
  })
  .passthrough();
type SignalGroup = z.infer<typeof groupSchema>;
type Address = z.infer<typeof address>;

const NOT_A_MEMBER = 'Contact is not a member of the group';

/** The contact id of a group member: its number, or its ACI when Signal hides the number (as inbound messages give it). */
const contactIdOf = (a: Address): string | undefined => a.number ?? a.uuid ?? undefined;
const isContact = (a: Address, contactId: string) => a.number === contactId || a.uuid === contactId;

/** What a refusal of signal-cli means; its own messages hold numbers and group ids, so only fixed reasons leave. */
export const groupRefusalOf = (error: SignalDaemonError): Error => {
  const { code, message } = error;
  if (code === SIGNAL_ERROR_CODES.invalidParams && /account does not exist/i.test(message))
    return new SignalDaemonUnavailableError("The bot's Signal account is not on the signal-cli daemon (unlinked or removed)");
  if (code === SIGNAL_ERROR_CODES.userError) {
    if (/group not found|invalid group id/i.test(message)) return new GroupOperationError('Group not found');
    if (/not a member/i.test(message)) return new GroupOperationError('The bot is no longer a member of the group');
    if (/not registered/i.test(message)) return new GroupOperationError('The contact is not registered on Signal');
    if (/invalid phone number/i.test(message)) return new GroupOperationError(contactRejectionOf('signal', '')!);
    return new GroupOperationError('signal-cli refused the group change');
  }
  if (code === SIGNAL_ERROR_CODES.internalError && /authorization ?failed/i.test(message)) return new GroupOperationError('The bot is not an admin of the group');
  if (code === SIGNAL_ERROR_CODES.untrustedKey) return new GroupOperationError("A member's safety number changed and is not trusted by the bot's account");
  // -3 (I/O), -5 (rate limit), -32603 otherwise: Signal's servers may take it later.
  return new GroupOperationError(`Signal could not make the group change now (${code})`, false);
};

export class SignalGroups implements GroupAdministration {
  constructor(private readonly rpc: SignalRpc) {}

  async createGroup(from: string, name: string): Promise<string> {
    const result = await this.call('updateGroup', { account: from, name });
    const groupId = (result as { groupId?: unknown } | null)?.groupId;
    if (typeof groupId !== 'string') throw new GroupOperationError('signal-cli made a group but gave no group id', false);
    return groupId;
  }

  async addMember(from: string, groupId: string, contactId: string): Promise<void> {
    checkGroupContact('signal', contactId);
    await this.call('updateGroup', { account: from, groupId, members: [recipientOf(contactId)] });
  }

  async removeMember(from: string, groupId: string, contactId: string): Promise<void> {
    checkGroupContact('signal', contactId);
    const group = await this.group(from, groupId);
    if (![...group.members, ...group.pendingMembers].some((m) => isContact(m, contactId))) throw new GroupOperationError(NOT_A_MEMBER);
    await this.call('updateGroup', { account: from, groupId, removeMembers: [recipientOf(contactId)] });
  }

  async setRole(from: string, groupId: string, contactId: string, role: GroupRole): Promise<void> {
    checkGroupContact('signal', contactId);
    const group = await this.group(from, groupId);
    if (!group.members.some((m) => isContact(m, contactId))) throw new GroupOperationError(NOT_A_MEMBER);
    await this.call('updateGroup', { account: from, groupId, ...(role === 'admin' ? { admins: [recipientOf(contactId)] } : { removeAdmins: [recipientOf(contactId)] }) });
  }

  async inviteLink(from: string, groupId: string): Promise<string> {
    const group = await this.group(from, groupId);
    if (group.groupInviteLink) return group.groupInviteLink;
    await this.call('updateGroup', { account: from, groupId, link: 'enabled' });
    const link = (await this.group(from, groupId)).groupInviteLink;
    if (!link) throw new GroupOperationError('signal-cli turned the invite link on but gave none', false);
    return link;
  }

  async members(from: string, groupId: string): Promise<GroupMember[]> {
    const group = await this.group(from, groupId);
    const isBot = (a: Address) => a.number === from;
    const admin = (a: Address) => group.admins.some((x) => (a.uuid && x.uuid === a.uuid) || (a.number && x.number === a.number));
    const listed: GroupMember[] = [];
    for (const m of group.members) {
      const contactId = contactIdOf(m);
      if (contactId && !isBot(m)) listed.push({ contactId, role: admin(m) ? 'admin' : 'member', status: 'joined' });
    }
    for (const m of group.pendingMembers) {
      const contactId = contactIdOf(m);
      if (contactId && !isBot(m)) listed.push({ contactId, role: 'member', status: 'invited' });
    }
    return listed;
  }

  private async group(from: string, groupId: string): Promise<SignalGroup> {
    const result = await this.call('listGroups', { account: from, groupId: [groupId] });
    const groups = z.array(groupSchema).safeParse(result);
    if (!groups.success) throw new GroupOperationError('signal-cli answered listGroups with something else than groups', false);
    const group = groups.data.find((g) => g.id === groupId);
    if (!group) throw new GroupOperationError('Group not found');
    if (group.isMember === false) throw new GroupOperationError('The bot is no longer a member of the group');
    return group;
  }

  private async call(method: string, params: Record<string, unknown>): Promise<unknown> {
    try {
      return await this.rpc.call(method, params);
    } catch (error) {
      if (error instanceof SignalDaemonError) throw groupRefusalOf(error);
      throw error;
    }
  }
}
