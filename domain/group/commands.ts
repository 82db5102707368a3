import type { GroupOperation, GroupRef } from './events.ts';

export type GroupCommand =
  | {
      type: 'RequestGroupChange';
      data: GroupRef & { requestId: string; operation: GroupOperation; sealed: string | null; keyId: string; groupName: string; now: Date };
    }
  | { type: 'RecordGroupCreated'; data: { requestId: string; sealed: string; now: Date } }
  | { type: 'RecordGroupChange'; data: { requestId: string; sealed: string; now: Date } }
  | { type: 'RecordGroupChangeFailed'; data: { requestId: string; reason: string; now: Date } }
  | { type: 'RecordGroupMembers'; data: GroupRef & { sealed: string; keyId: string; memberCount: number; digest: string; now: Date } };
