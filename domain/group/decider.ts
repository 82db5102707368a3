import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { GroupCommand } from './commands.ts';
import { SUCCESS_EVENT, type GroupEvent, type GroupOperation, type GroupRef } from './events.ts';

export interface GroupState {
  readonly ref: GroupRef | null;
  /** The data key that seals the stream's contact ids, group id, link and member lists. */
  readonly keyId: string | null;
  readonly created: boolean;
  /** The messenger's group id, sealed (null until created). */
  readonly group: string | null;
  /** Requests not yet carried out, in the order they were made. */
  readonly pending: ReadonlyMap<string, GroupOperation>;
  readonly membersDigest: string | null;
  /** The last recorded list, member ref → member digest; null until a list in that form was recorded. */
  readonly members: ReadonlyMap<string, string> | null;
  /** Changes recorded since the last whole list. */
  readonly changesSinceFullSync: number;
}

/** A whole member list is recorded again after this many changes (a reader folds at most this many). */
export const GROUP_FULL_SYNC_EVERY = 50;

/** At most this many requests of one app-messenger wait for the messenger at once. */
export const MAX_PENDING_GROUP_CHANGES = 20;

export const groupStreamName = (appMessengerId: string) => `group-${appMessengerId}`;

const NEEDS_MEMBER: ReadonlySet<GroupOperation> = new Set(['remove-member', 'promote-admin', 'demote-admin']);

const initialState = (): GroupState => ({ ref: null, keyId: null, created: false, group: null, pending: new Map(), membersDigest: null, members: null, changesSinceFullSync: 0 });

const refOf = (ref: GroupRef): GroupRef => ({ appId: ref.appId, appMessengerId: ref.appMessengerId, messenger: ref.messenger });

export const decide = (command: GroupCommand, state: GroupState): Decision<GroupEvent> => {
  switch (command.type) {
    case 'RequestGroupChange': {
      const { requestId, operation, sealed, keyId, groupName, now } = command.data;
      if (state.pending.has(requestId)) return [];
      if (state.keyId !== null && keyId !== state.keyId) return domainError('conflict', 'The group is sealed with another key');
      if ((operation === 'invite-link') !== (sealed === null)) return domainError('validation', 'A member change names a contact; an invite link does not');
      // Removing or changing the role of a member needs a group: one exists, or a request in flight makes one.
      if (NEEDS_MEMBER.has(operation) && !state.created && state.pending.size === 0)
        return domainError('illegal_state', 'The app messenger has no group yet: add a member or get its invite link first');
      if (state.pending.size >= MAX_PENDING_GROUP_CHANGES)
        return domainError('limit', `Too many group changes in progress for this app messenger: at most ${MAX_PENDING_GROUP_CHANGES}`);
      return [{ type: 'GroupChangeRequested', data: { ...refOf(command.data), requestId, operation, sealed, keyId, groupName, requestedAt: now.toISOString() } }];
    }
    case 'RecordGroupCreated': {
      const { requestId, sealed, now } = command.data;
      if (state.created || !state.pending.has(requestId) || !state.ref || !state.keyId) return [];
      return [{ type: 'GroupCreated', data: { ...state.ref, requestId, sealed, keyId: state.keyId, createdAt: now.toISOString() } }];
    }
    case 'RecordGroupChange': {
      const { requestId, sealed, now } = command.data;
      const operation = state.pending.get(requestId);
      if (!operation || !state.ref || !state.keyId) return [];
      if (!state.created) return domainError('illegal_state', 'A group change was recorded before its group');
      const data = { ...state.ref, requestId, sealed, keyId: state.keyId, changedAt: now.toISOString() };
      return [{ type: SUCCESS_EVENT[operation], data }];
    }
    case 'RecordGroupChangeFailed': {
      const { requestId, reason, now } = command.data;
      const operation = state.pending.get(requestId);
      if (!operation || !state.ref) return [];
      return [{ type: 'GroupChangeFailed', data: { ...state.ref, requestId, operation, reason, failedAt: now.toISOString() } }];
    }
    case 'RecordGroupMembers': {
      const { members, keyId, digest, now } = command.data;
      if (!state.created || digest === state.membersDigest) return [];
      if (keyId !== state.keyId) return domainError('conflict', 'The group is sealed with another key');
      const at = now.toISOString();
      const whole = (): GroupEvent[] => [{ type: 'GroupMembersSynced', data: { ...refOf(command.data), members, keyId, memberCount: members.length, digest, syncedAt: at } }];
      if (state.members === null || state.changesSinceFullSync + 1 >= GROUP_FULL_SYNC_EVERY) return whole();
      const previous = state.members;
      const changed = members.filter((m) => previous.get(m.memberRef) !== m.memberDigest);
      const present = new Set(members.map((m) => m.memberRef));
      const removedRefs = [...previous.keys()].filter((memberRef) => !present.has(memberRef));
      // When most of the list changed, the list itself is the smaller record.
      if (changed.length + removedRefs.length > Math.max(1, members.length / 2)) return whole();
      return [{ type: 'GroupMembersChanged', data: { ...refOf(command.data), changed, removedRefs, keyId, memberCount: members.length, digest, changedAt: at } }];
    }
    default:
      return assertNever(command);
  }
};

const settled = (state: GroupState, requestId: string): GroupState => {
  const pending = new Map(state.pending);
  pending.delete(requestId);
  return { ...state, pending };
};

export const evolve = (state: GroupState, event: GroupEvent): GroupState => {
  switch (event.type) {
    case 'GroupChangeRequested':
      return { ...state, ref: refOf(event.data), keyId: state.keyId ?? event.data.keyId, pending: new Map(state.pending).set(event.data.requestId, event.data.operation) };
    case 'GroupCreated':
      return { ...state, created: true, group: event.data.sealed };
    case 'GroupMemberAdded':
    case 'GroupMemberRemoved':
    case 'GroupAdminPromoted':
    case 'GroupAdminDemoted':
    case 'GroupInviteLinkCreated':
    case 'GroupChangeFailed':
      return settled(state, event.data.requestId);
    case 'GroupMembersSynced':
      return {
        ...state,
        membersDigest: event.data.digest,
        members: 'members' in event.data ? new Map(event.data.members.map((m) => [m.memberRef, m.memberDigest])) : null,
        changesSinceFullSync: 0,
      };
    case 'GroupMembersChanged': {
      if (state.members === null) return { ...state, membersDigest: event.data.digest };
      const members = new Map(state.members);
      for (const m of event.data.changed) members.set(m.memberRef, m.memberDigest);
      for (const memberRef of event.data.removedRefs) members.delete(memberRef);
      return { ...state, membersDigest: event.data.digest, members, changesSinceFullSync: state.changesSinceFullSync + 1 };
    }
    default:
      return assertNever(event);
  }
};

export const groupDecider: Decider<GroupState, GroupCommand, GroupEvent> = { decide, evolve, initialState };
