import type { SessionIdentityOrigin } from './events.ts';

/** Keep the Session identity of an app-messenger, unless it has one (the first one kept stays). */
export interface KeepSessionIdentity {
  type: 'KeepSessionIdentity';
  data: { appMessengerId: string; sessionId: string; secretEncrypted: string; origin: SessionIdentityOrigin; now: Date };
}

/**
 * Raise the bot's send clock: every message it sends is stamped after `upTo` from now on (see
 * `SessionSendClockAdvanced`). A lower or equal value changes nothing.
 */
export interface AdvanceSendClock {
  type: 'AdvanceSendClock';
  data: { appMessengerId: string; upTo: number; now: Date };
}

export type SessionIdentityCommand = KeepSessionIdentity | AdvanceSendClock;
