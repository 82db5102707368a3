import { signingSecretsAt } from '../../domain/app/events.ts';
import type { AppMessengerView, AppView } from '../../projections/apps/apps-projection.ts';
import type { CredentialView } from '../../projections/credentials/credentials-projection.ts';
import type { AppJson, AppMessengerJson, CredentialJson } from './response-schemas.ts';

/**
 * How the account API shows its objects (never a secret unless asked for the full credential), in
 * the shapes its OpenAPI document declares (response-schemas.ts).
 */
export const appMessengerJson = (m: AppMessengerView): AppMessengerJson => ({
  id: m.id,
  appId: m.appId,
  messenger: m.messenger,
  status: m.status,
  address: m.address,
  health: m.health,
  healthReason: m.healthReason,
});

/** Until when the secret a rotation replaced still signs, while it does. */
const previousSigningUntil = (app: AppView): string | null =>
  signingSecretsAt({ ...app.settings, webhookSigningSecretEncrypted: null }, new Date()).length > 0 ? (app.settings.webhookPreviousSigningSecretUntil ?? null) : null;

export const appJson = (app: AppView): AppJson => ({
  id: app.id,
  name: app.settings.name,
  protocol: app.settings.protocol,
  status: app.settings.status,
  deliveryType: app.settings.deliveryType,
  webhookUrl: app.settings.webhookUrl,
  webhookAuthType: app.settings.webhookAuthType,
  webhookAuthHeaderName: app.settings.webhookAuthHeaderName,
  hasWebhookAuthSecret: app.settings.webhookAuthSecretEncrypted !== null,
  hasWebhookSigningSecret: (app.settings.webhookSigningSecretEncrypted ?? null) !== null,
  /** Until when the signing secret replaced by the last rotation still signs (null: none does). */
  webhookPreviousSigningSecretUntil: previousSigningUntil(app),
  apiKeyId: app.settings.apiKeyId,
  userId: app.userId,
  createdAt: app.createdAt,
  messengers: app.messengers.map(appMessengerJson),
});

export const credentialJson = (c: CredentialView): CredentialJson => ({
  credentialId: c.credentialId,
  type: c.type,
  name: c.name,
  appIds: c.appIds,
  keyPreview: c.keyPreview,
  webhookUrl: c.webhookUrl,
  webhookAuthType: c.webhookAuthType,
  webhookAuthHeaderName: c.webhookAuthHeaderName,
  createdAt: c.createdAt,
});
