import type { NotificationPreferences } from './notification-preferences.ts';

export type SendTier = 'free' | 'paid';

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
  | { type: 'NotificationPreferencesChanged'; data: { userId: string; preferences: NotificationPreferences; changedAt: string } };
