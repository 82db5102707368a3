import type { SessionIdentityOrigin } from './events.ts';

/** Keep the Session identity of an app-messenger, unless it has one (the first one kept stays). */
export interface KeepSessionIdentity {
  type: 'KeepSessionIdentity';
  data: { appMessengerId: string; sessionId: string; secretEncrypted: string; origin: SessionIdentityOrigin; now: Date };
}

export type SessionIdentityCommand = KeepSessionIdentity;
