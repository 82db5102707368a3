import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { SIGN_IN_ERRORS, signInDecider } from './decider.ts';
import type { SignInEvent } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const later = new Date(now.getTime() + 16 * 60_000);
const expiresAt = new Date(now.getTime() + 15 * 60_000);
const spec = deciderSpec(signInDecider);
const requested: SignInEvent = { type: 'EmailSignInRequested', data: { signInId: 's1', email: 'a@example.com', secretHash: 'h1', expiresAt: expiresAt.toISOString(), requestedAt: now.toISOString() } };
const completed: SignInEvent = { type: 'EmailSignInCompleted', data: { signInId: 's1', userId: 'usr_1', completedAt: now.toISOString() } };
const complete = (secretHash: string, at = now) => ({ type: 'CompleteEmailSignIn' as const, data: { secretHash, userId: 'usr_1', now: at } });

describe('sign-in decider', () => {
  it('records a request with the hash of the secret only', () =>
    spec.given([]).when({ type: 'RequestEmailSignIn', data: { signInId: 's1', email: 'a@example.com', secretHash: 'h1', expiresAt, now } }).then([requested]));

  it('signs in once with the right secret before the expiry', () => spec.given([requested]).when(complete('h1')).then([completed]));

  it('refuses a wrong secret as it refuses a sign-in that does not exist, recording nothing', () => {
    spec.given([requested]).when(complete('h2')).thenFails('forbidden', SIGN_IN_ERRORS.invalid);
    spec.given([]).when(complete('h1')).thenFails('forbidden', SIGN_IN_ERRORS.invalid);
    spec.given([requested, completed]).when(complete('h2')).thenFails('forbidden', SIGN_IN_ERRORS.invalid);
  });

  it('refuses a link used before, recording the refusal once', () => {
    const refused: SignInEvent = { type: 'EmailSignInRefused', data: { signInId: 's1', reason: 'used', refusedAt: now.toISOString() } };
    spec.given([requested, completed]).when(complete('h1')).then([refused]);
    spec.given([requested, completed, refused]).when(complete('h1')).thenFails('illegal_state', SIGN_IN_ERRORS.used);
  });

  it('refuses a link followed after its expiry, recording the refusal once', () => {
    const refused: SignInEvent = { type: 'EmailSignInRefused', data: { signInId: 's1', reason: 'expired', refusedAt: later.toISOString() } };
    spec.given([requested]).when(complete('h1', later)).then([refused]);
    spec.given([requested, refused]).when(complete('h1', later)).thenFails('illegal_state', SIGN_IN_ERRORS.expired);
  });
});
