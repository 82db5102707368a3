import type { Messenger } from '../shared/messengers.ts';
import type { NotificationPreferences } from './notification-preferences.ts';
import type { SendTier, SubscriptionPeriod } from './events.ts';

export type UserCommand =
  | { type: 'RegisterUser'; data: { userId: string; email: string; name: string; now: Date } }
  | { type: 'RenameUser'; data: { name: string; now: Date } }
  | { type: 'StartSession'; data: { sessionId: string; tokenHash: string; expiresAt: Date; now: Date } }
  /** The user signs out of one session (`logout`), or an operator revokes it (`revoked`). */
  | { type: 'EndSession'; data: { sessionId: string; reason: 'logout' | 'revoked'; now: Date } }
  /** Every live session of the user ends. */
  | { type: 'EndAllSessions'; data: { reason: 'logout' | 'revoked'; now: Date } }
  | { type: 'ChangeSendTier'; data: { tier: SendTier; now: Date } }
  | { type: 'GenerateRecoveryCode'; data: { codeHash: string; now: Date } }
  | { type: 'UseRecoveryCode'; data: { codeHash: string; now: Date } }
  | { type: 'SetNotificationPreferences'; data: { preferences: NotificationPreferences; now: Date } }
  | { type: 'LinkMessengerContact'; data: { contactLinkId: string; messenger: Messenger; contactRef: string; keyId: string; sealedContact: string; now: Date } }
  | { type: 'UnlinkMessengerContact'; data: { contactLinkId: string; now: Date } }
  /** An invoice of the user was paid: the paid tier for its period (once per invoice). */
  | { type: 'ExtendSubscription'; data: { invoiceId: string; period: SubscriptionPeriod; now: Date } };
