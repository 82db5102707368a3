export type SendTier = 'free' | 'paid';

export type UserEvent =
  | { type: 'UserRegistered'; data: { userId: string; email: string; name: string; registeredAt: string } }
  | { type: 'UserRenamed'; data: { userId: string; name: string; renamedAt: string } }
  | {
      type: 'SessionStarted';
      data: { userId: string; sessionId: string; tokenHash: string; startedAt: string; expiresAt: string };
    }
  | { type: 'SendTierChanged'; data: { userId: string; tier: SendTier; changedAt: string } };
