import type { Messenger } from '../shared/messengers.ts';
import type { NotificationPreferences } from './notification-preferences.ts';

export type SendTier = 'free' | 'paid';

/** What a paid invoice buys: 30 days (`monthly`) or 365 days (`annual`) of the paid tier. */
export type SubscriptionPeriod = 'monthly' | 'annual';

/** Why a dashboard session ended before its expiry. */
export type SessionEndReason = 'logout' | 'revoked' | 'replaced';

export type UserEvent =
  | { type: 'UserRegistered'; data: { userId: string; email: string; name: string; registeredAt: string } }
  | { type: 'UserRenamed'; data: { userId: string; name: string; renamedAt: string } }
  | {
      type: 'SessionStarted';
      data: { userId: string; sessionId: string; tokenHash: string; startedAt: string; expiresAt: string };
    }
  | { type: 'SessionEnded'; data: { userId: string; sessionId: string; reason: SessionEndReason; endedAt: string } }
  | { type: 'SendTierChanged'; data: { userId: string; tier: SendTier; changedAt: string } }
  /** A new recovery code (its SHA-256 only): the one before no longer works. */
  | { type: 'RecoveryCodeGenerated'; data: { userId: string; codeHash: string; generatedAt: string } }
  /** The recovery code signed the user in: it works no more. */
  | { type: 'RecoveryCodeUsed'; data: { userId: string; usedAt: string } }
  /** Which alerts the user gets on which channel, as a whole. */
  | { type: 'NotificationPreferencesChanged'; data: { userId: string; preferences: NotificationPreferences; changedAt: string } }
  /**
   * A messenger contact of the user, proven by a `/link CODE` it sent (`contactLinkId` is the
   * code's ref): `contactRef` is a keyed hash of messenger and contact id (to find the user of a
   * `/signin`), the contact id itself is sealed under data key `keyId`, which lives as long as the link.
   */
  | { type: 'MessengerContactLinked'; data: { userId: string; contactLinkId: string; messenger: Messenger; contactRef: string; keyId: string; sealedContact: string; linkedAt: string } }
  /**
   * A paid invoice bought a period of the paid tier: it starts now, or where the paid time bought
   * before ends. The send limit of every credential of the user follows it until `paidUntil`.
   */
  | { type: 'SubscriptionExtended'; data: { userId: string; invoiceId: string; period: SubscriptionPeriod; paidFrom: string; paidUntil: string; extendedAt: string } }
  /** The link ended: its data key is destroyed with this event, so the contact id no longer opens. */
  | { type: 'MessengerContactUnlinked'; data: { userId: string; contactLinkId: string; keyId: string; unlinkedAt: string } };
