import { UnavailableError } from '../../errors/unavailable.ts';

/** The Session network cannot be reached: no attempt is spent, the delivery is tried again later. */
export class SessionUnavailableError extends UnavailableError {
  override readonly name = 'SessionUnavailableError';
}

/** The app-messenger already has another Session identity (its address, which contacts write to). */
export class SessionIdentityTakenError extends Error {
  override readonly name = 'SessionIdentityTakenError';
}
