import type { CredentialType } from './events.ts';

export type CredentialCommand =
  | {
      type: 'CreateCredential';
      data: {
        credentialId: string;
        userId: string;
        type: CredentialType;
        name: string;
        appIds: string[];
        /** The apps the user owns now: a credential may only cover those. */
        ownedAppIds: readonly string[];
        /** How many live credentials the user has now, and how many they may have. */
        liveCredentials: number;
        maxPerUser: number;
        keyHash: string;
        secretEncrypted: string;
        keyPreview: string;
        webhookUrl: string | null;
        webhookAuthType: string | null;
        webhookAuthHeaderName: string | null;
        now: Date;
      };
    }
  | { type: 'DeleteCredential'; data: { userId: string; now: Date } };
