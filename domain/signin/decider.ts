import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { SignInCommand } from './commands.ts';
import type { SignInEvent } from './events.ts';

export type SignInState =
  | { status: 'none' }
  | {
      status: 'requested' | 'completed';
      signInId: string;
      email: string;
      secretHash: string;
      expiresAt: number;
      /** Refusals recorded so far (each reason once). */
      refused: ReadonlyArray<'used' | 'expired'>;
    };

export const signInStreamName = (signInId: string) => `signin-${signInId}`;

/** What a link that cannot sign in is told (the same for a wrong secret as for no such sign-in). */
export const SIGN_IN_ERRORS = {
  invalid: 'This sign-in link is not valid',
  used: 'This sign-in link was used already: ask for a new one',
  expired: 'This sign-in link has expired: ask for a new one',
} as const;

/**
 * A link signs in once, before it expires. A link followed again, or too late, is refused, and the
 * refusal recorded (once per reason); a wrong secret is refused like a sign-in that does not exist.
 */
export const decide = (command: SignInCommand, state: SignInState): Decision<SignInEvent> => {
  switch (command.type) {
    case 'RequestEmailSignIn': {
      if (state.status !== 'none') return domainError('conflict', 'Sign-in already requested');
      const { signInId, email, secretHash, expiresAt, now } = command.data;
      return [{ type: 'EmailSignInRequested', data: { signInId, email, secretHash, expiresAt: expiresAt.toISOString(), requestedAt: now.toISOString() } }];
    }
    case 'CompleteEmailSignIn': {
      const { secretHash, userId, now } = command.data;
      if (state.status === 'none' || state.secretHash !== secretHash) return domainError('forbidden', SIGN_IN_ERRORS.invalid);
      const reason = state.status === 'completed' ? 'used' : now.getTime() >= state.expiresAt ? 'expired' : undefined;
      if (reason === undefined) return [{ type: 'EmailSignInCompleted', data: { signInId: state.signInId, userId, completedAt: now.toISOString() } }];
      if (state.refused.includes(reason)) return domainError('illegal_state', SIGN_IN_ERRORS[reason]);
      return [{ type: 'EmailSignInRefused', data: { signInId: state.signInId, reason, refusedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: SignInState, event: SignInEvent): SignInState => {
  switch (event.type) {
    case 'EmailSignInRequested': {
      const { signInId, email, secretHash, expiresAt } = event.data;
      return { status: 'requested', signInId, email, secretHash, expiresAt: Date.parse(expiresAt), refused: [] };
    }
    case 'EmailSignInCompleted':
      return state.status === 'none' ? state : { ...state, status: 'completed' };
    case 'EmailSignInRefused':
      return state.status === 'none' ? state : { ...state, refused: [...state.refused, event.data.reason] };
    default:
      return assertNever(event);
  }
};

export const signInDecider: Decider<SignInState, SignInCommand, SignInEvent> = { decide, evolve, initialState: () => ({ status: 'none' }) };
