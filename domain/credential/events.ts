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

export type CredentialEvent =
  | { type: 'CredentialCreated'; data: CredentialRecord }
  | { type: 'CredentialDeleted'; data: { credentialId: string; userId: string; appIds: string[]; deletedAt: string } };
