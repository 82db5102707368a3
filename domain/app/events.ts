import type { Messenger } from '../shared/messengers.ts';

export type AppStatus = 'active' | 'disabled';
export type DeliveryType = 'poll' | 'webhook';
export type WebhookAuthType = 'bearer' | 'header';
export type AppMessengerStatus = 'processing' | 'active' | 'disabled';
/**
 * Whether an app-messenger's bot identity can be reached through its daemon: `ok`, the daemon
 * cannot be reached (`daemon-unreachable`), or the daemon no longer has the bot's account
 * (`account-missing`: unlinked from the phone, or removed). Only messengers on a daemon change it.
 */
export type AppMessengerHealth = 'ok' | 'daemon-unreachable' | 'account-missing';

/** The settings of an app that its owner can change. Secrets arrive already encrypted. */
export interface AppSettings {
  name: string;
  protocol: Messenger[];
  status: AppStatus;
  deliveryType: DeliveryType;
  webhookUrl: string | null;
  webhookAuthType: WebhookAuthType | null;
  webhookAuthSecretEncrypted: string | null;
  webhookAuthHeaderName: string | null;
  apiKeyId: string | null;
  /**
   * The Standard Webhooks signing secret (`whsec_` + base64 of 32 random bytes), encrypted: Relay
   * makes it when the app is first delivered by webhook, and on rotation; apart from the
   * bearer/header secret that authenticates Relay to the receiver. Absent from apps made before
   * issue 24 (then null).
   */
  webhookSigningSecretEncrypted?: string | null;
  /** The secret before the last rotation, which signs beside the new one until `…Until` (ISO 8601). */
  webhookPreviousSigningSecretEncrypted?: string | null;
  webhookPreviousSigningSecretUntil?: string | null;
}

/**
 * The signing secrets (encrypted) an app's webhook deliveries are signed with at `now`: the current
 * one, and the one a rotation replaced while their overlap lasts.
 */
export const signingSecretsAt = (settings: AppSettings, now: Date): string[] => {
  const { webhookSigningSecretEncrypted: current, webhookPreviousSigningSecretEncrypted: previous, webhookPreviousSigningSecretUntil: until } = settings;
  const overlapping = previous && until && Date.parse(until) > now.getTime() ? [previous] : [];
  return current ? [current, ...overlapping] : overlapping;
};

export type AppEvent =
  | { type: 'AppCreated'; data: AppSettings & { appId: string; userId: string; createdAt: string } }
  | { type: 'AppUpdated'; data: { appId: string; changes: Partial<AppSettings>; updatedAt: string } }
  | { type: 'AppDeleted'; data: { appId: string; userId: string; deletedAt: string } }
  /** The owner asked the webhook to be tried again now (the dashboard's "Retry now"): a message waiting out its backoff goes at once. */
  | { type: 'AppWebhookRetryRequested'; data: { appId: string; userId: string; requestedAt: string } }
  | {
      type: 'AppMessengerAdded';
      data: { appId: string; appMessengerId: string; messenger: Messenger; status: 'processing'; addedAt: string };
    }
  | {
      type: 'AppMessengerProvisioned';
      data: { appId: string; appMessengerId: string; address: string; provisionedAt: string };
    }
  | {
      type: 'AppMessengerStatusChanged';
      data: { appId: string; appMessengerId: string; status: 'active' | 'disabled'; changedAt: string };
    }
  | {
      type: 'AppMessengerHealthChanged';
      data: { appId: string; appMessengerId: string; health: AppMessengerHealth; reason: string | null; changedAt: string };
    };

/** A new app's settings: active, delivered by poll, no webhook, no linked key, unless given. */
export const newAppSettings = (name: string, protocol: Messenger[], given: Partial<AppSettings> = {}): AppSettings => ({
  name,
  protocol,
  status: 'active',
  deliveryType: 'poll',
  webhookUrl: null,
  webhookAuthType: null,
  webhookAuthSecretEncrypted: null,
  webhookAuthHeaderName: null,
  apiKeyId: null,
  ...given,
});
