import { createHash, randomBytes } from 'node:crypto';
import { checkGroupContact } from '../messenger-rules.ts';
import { GroupOperationError, type GroupAdministration, type GroupMember, type GroupRole, type Messenger } from '../port.ts';
import type { SimulatorStore } from './simulator-store.ts';

/** A group id in the messenger's own form: Signal's base64 of 32 bytes, SimpleX's number, a Session group's `03…` key. */
const newGroupId = (messenger: Messenger): string => {
  switch (messenger) {
    case 'signal':
      return randomBytes(32).toString('base64');
    case 'simplex':
      return String(randomBytes(4).readUInt32BE() % 1_000_000_000);
    case 'session':
      return `03${randomBytes(32).toString('hex')}`;
  }
};

/**
 * The simulator's groups, in `simulator.db`: what a daemon would check (the group is the bot's,
 * the contact is in the messenger's format, the member is in the group) and the failures it was
 * told to fake for a contact (`relay simulate fail`). Session groups have no invite links.
 */
export class SimulatorGroups implements GroupAdministration {
  constructor(
    private readonly messenger: Messenger,
    private readonly store: SimulatorStore,
  ) {}

  async createGroup(from: string, name: string): Promise<string> {
    const groupId = newGroupId(this.messenger);
    this.store.createGroup(this.messenger, groupId, from, name);
    return groupId;
  }

  async addMember(from: string, groupId: string, contactId: string): Promise<void> {
    this.check(from, groupId, contactId);
    if (this.store.memberRole(this.messenger, groupId, contactId) === undefined) this.store.putMember(this.messenger, groupId, contactId, 'member');
  }

  async removeMember(from: string, groupId: string, contactId: string): Promise<void> {
    this.check(from, groupId, contactId);
    if (!this.store.removeMember(this.messenger, groupId, contactId)) throw new GroupOperationError('Contact is not a member of the group');
  }

  async setRole(from: string, groupId: string, contactId: string, role: GroupRole): Promise<void> {
    this.check(from, groupId, contactId);
    if (this.store.memberRole(this.messenger, groupId, contactId) === undefined) throw new GroupOperationError('Contact is not a member of the group');
    this.store.putMember(this.messenger, groupId, contactId, role);
  }

  async inviteLink(from: string, groupId: string): Promise<string> {
    const group = this.groupOf(from, groupId);
    if (this.messenger === 'session') throw new GroupOperationError('Session groups have no invite links');
    if (group.inviteLink) return group.inviteLink;
    const secret = createHash('sha256').update(groupId).update(randomBytes(16)).digest('base64url');
    const link = this.messenger === 'signal' ? `https://signal.group/#${secret}` : `https://simplex.chat/contact#/?v=2-7&smp=simulated%2F${secret}`;
    this.store.setInviteLink(this.messenger, groupId, link);
    return link;
  }

  async members(from: string, groupId: string): Promise<GroupMember[]> {
    this.groupOf(from, groupId);
    return this.store.groupMembers(this.messenger, groupId).map((m) => ({ contactId: m.contactId, role: m.role === 'admin' ? 'admin' : 'member', status: 'joined' }));
  }

  private groupOf(from: string, groupId: string) {
    const group = this.store.group(this.messenger, groupId);
    if (!group || group.owner !== from) throw new GroupOperationError('Group not found');
    return group;
  }

  private check(from: string, groupId: string, contactId: string) {
    this.groupOf(from, groupId);
    checkGroupContact(this.messenger, contactId);
    const injected = this.store.consumeFailure(this.messenger, contactId);
    if (injected) throw new GroupOperationError(injected.reason, injected.permanent);
  }
}
