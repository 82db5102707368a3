import type { ForgottenKey } from './events.ts';

/** Destroy retired data keys and record it. */
export interface ForgetBodies {
  type: 'ForgetBodies';
  data: { shredId: string; keys: ForgottenKey[]; now: Date };
}

export type ShredCommand = ForgetBodies;
