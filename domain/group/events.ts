import type { Messenger } from '../shared/messengers.ts';

/**
 * The group an app-messenger's bot administers (one per app-messenger: the interface's group
 * routes name only the app-messenger). Relay records what it asked of the messenger and what
 * came of it; the group itself lives on the messenger. Contact ids, the group id, the invite link
 * and the member list are sealed (`sealed`) with the group's data key, which lives as long as the
 * app (docs/privacy.md).
 */
export const GROUP_OPERATIONS = ['add-member', 'remove-member', 'promote-admin', 'demote-admin', 'invite-link'] as const;
export type GroupOperation = (typeof GROUP_OPERATIONS)[number];

/** What every group event says of its app-messenger. */
export interface GroupRef {
  readonly appId: string;
  readonly appMessengerId: string;
  readonly messenger: Messenger;
}

/**
 * One member as a group event keeps it: `memberRef` (a keyed hash of the contact id under the
 * group's key: the same contact, the same ref, in this group only), `memberDigest` (a keyed hash of
 * the contact id, role and status: it changes when they do), and the member itself, sealed. Neither
 * hash tells anything without the key; both are withheld from every public event stream.
 */
export interface SealedMember {
  readonly memberRef: string;
  readonly memberDigest: string;
  readonly sealed: string;
}

export type GroupEvent =
  | {
      type: 'GroupChangeRequested';
      data: GroupRef & {
        requestId: string;
        operation: GroupOperation;
        /** The contact id, sealed (null for `invite-link`). */
        sealed: string | null;
        keyId: string;
        /** The name a group created for this request gets (the app's name). */
        groupName: string;
        requestedAt: string;
      };
    }
  | { type: 'GroupCreated'; data: GroupRef & { requestId: string; /** the messenger's group id */ sealed: string; keyId: string; createdAt: string } }
  | { type: 'GroupMemberAdded'; data: GroupRef & { requestId: string; sealed: string; keyId: string; changedAt: string } }
  | { type: 'GroupMemberRemoved'; data: GroupRef & { requestId: string; sealed: string; keyId: string; changedAt: string } }
  | { type: 'GroupAdminPromoted'; data: GroupRef & { requestId: string; sealed: string; keyId: string; changedAt: string } }
  | { type: 'GroupAdminDemoted'; data: GroupRef & { requestId: string; sealed: string; keyId: string; changedAt: string } }
  | { type: 'GroupInviteLinkCreated'; data: GroupRef & { requestId: string; /** the link */ sealed: string; keyId: string; changedAt: string } }
  | { type: 'GroupChangeFailed'; data: GroupRef & { requestId: string; operation: GroupOperation; reason: string; failedAt: string } }
  | {
      /** The whole member list: the first one read, then every GROUP_FULL_SYNC_EVERY changes, or when most of it changed. */
      type: 'GroupMembersSynced';
      data: GroupRef &
        (
          | { members: SealedMember[] }
          /** Written before issue 23: the whole list sealed as one. */
          | { sealed: string }
        ) & {
          keyId: string;
          memberCount: number;
          /** A keyed digest of the list: equal lists, equal digests; nothing else can be learnt from it. */
          digest: string;
          syncedAt: string;
        };
    }
  | {
      /** What changed in the member list since the list before: members added or changed, and the refs of those gone. */
      type: 'GroupMembersChanged';
      data: GroupRef & { changed: SealedMember[]; removedRefs: string[]; keyId: string; memberCount: number; digest: string; changedAt: string };
    };

/** The event that records a successful operation. */
export const SUCCESS_EVENT = {
  'add-member': 'GroupMemberAdded',
  'remove-member': 'GroupMemberRemoved',
  'promote-admin': 'GroupAdminPromoted',
  'demote-admin': 'GroupAdminDemoted',
  'invite-link': 'GroupInviteLinkCreated',
} as const satisfies Record<GroupOperation, GroupEvent['type']>;
