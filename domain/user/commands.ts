import type { SendTier } from './events.ts';

export type UserCommand =
  | { type: 'RegisterUser'; data: { userId: string; email: string; name: string; now: Date } }
  | { type: 'RenameUser'; data: { name: string; now: Date } }
  | { type: 'StartSession'; data: { sessionId: string; tokenHash: string; expiresAt: Date; now: Date } }
  | { type: 'ChangeSendTier'; data: { tier: SendTier; now: Date } };
