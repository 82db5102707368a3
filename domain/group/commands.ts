import type { GroupOperation, GroupRef, SealedMember } from './events.ts';

export type GroupCommand =
  | {
      type: 'RequestGroupChange';
      data: GroupRef & { requestId: string; operation: GroupOperation; sealed: string | null; keyId: string; groupName: string; now: Date };
    }
  | { type: 'RecordGroupCreated'; data: { requestId: string; sealed: string; now: Date } }
  | { type: 'RecordGroupChange'; data: { requestId: string; sealed: string; now: Date } }
  | { type: 'RecordGroupChangeFailed'; data: { requestId: string; reason: string; now: Date } }
  /** The member list as the messenger has it now; the decider records what changed, or the whole list. */
  | { type: 'RecordGroupMembers'; data: GroupRef & { members: SealedMember[]; keyId: string; digest: string; now: Date } };
