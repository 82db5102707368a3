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
  | { type: 'DeleteCredential'; data: { userId: string; now: Date } };
