import type { CredentialRecord } from './events.ts';

export type CredentialCommand =
  | {
      type: 'CreateCredential';
      /** What CredentialCreated records, and what the decider checks it against. */
      data: Omit<CredentialRecord, 'createdAt'> & {
        /** The apps the user owns now: a credential may only cover those. */
        ownedAppIds: readonly string[];
        /** How many live credentials the user has now, and how many they may have. */
        liveCredentials: number;
        maxPerUser: number;
        now: Date;
      };
    }
  | { type: 'DeleteCredential'; data: { userId: string; now: Date } }
  | {
      type: 'RollCredential';
      /** The new key (its hash, encrypted copy and preview), and how long the old one keeps working. */
      data: Pick<CredentialRecord, 'userId' | 'keyHash' | 'secretEncrypted' | 'keyPreview'> & {
        overlapMs: number;
        /** The shortest overlap allowed (CREDENTIAL_ROLL_MIN_OVERLAP_SECONDS). */
        minOverlapMs: number;
        now: Date;
      };
    }
  /** An instance saw the key used at `usedAt`: recorded unless a use within the last hour already is. */
  | { type: 'RecordCredentialUse'; data: { usedAt: Date } };
