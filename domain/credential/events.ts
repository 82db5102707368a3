export const CREDENTIAL_TYPES = ['api-key', 'webhook-bearer', 'webhook-header'] as const;
export type CredentialType = (typeof CREDENTIAL_TYPES)[number];

/** What is recorded of a credential. The key itself never appears: only its hash and an encrypted copy. */
export interface CredentialRecord {
  credentialId: string;
  userId: string;
  type: CredentialType;
  name: string;
  appIds: string[];
  keyHash: string;
  secretEncrypted: string;
  /** First characters of the key, for display (`rly_ab12…`). */
  keyPreview: string;
  webhookUrl: string | null;
  webhookAuthType: string | null;
  webhookAuthHeaderName: string | null;
  createdAt: string;
}

/** How often a key's use is recorded at most: the first use in each hour (docs/events.md). */
export const CREDENTIAL_USE_INTERVAL_MS = 3_600_000;

/** The overlaps the owner may choose when rolling a key: an hour to a week (the least is configurable, for tests). */
export const ROLL_OVERLAP_MAX_MS = 7 * 24 * 3_600_000;

export type CredentialEvent =
  | { type: 'CredentialCreated'; data: CredentialRecord }
  | { type: 'CredentialDeleted'; data: { credentialId: string; userId: string; appIds: string[]; deletedAt: string } }
  /**
   * A new secret for the same credential (same id, name, apps): the key before it still works
   * until `previousKeyUntil`, then only the new one does. Rolling again ends any older secret at once.
   */
  | {
      type: 'CredentialRolled';
      data: {
        credentialId: string;
        userId: string;
        appIds: string[];
        keyHash: string;
        secretEncrypted: string;
        keyPreview: string;
        previousKeyUntil: string;
        rolledAt: string;
      };
    }
  /** The key was used (its first use in an hour): the dashboard's "last used", to within the hour. */
  | { type: 'CredentialUsed'; data: { credentialId: string; userId: string; appIds: string[]; usedAt: string } };
