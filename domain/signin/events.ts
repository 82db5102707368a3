/**
 * On stream `signin-<signInId>`: a sign-in by a one-time link sent to an e-mail address. Only the
 * hash of the link's secret is kept; the link itself exists only in the mail.
 */
export type SignInEvent =
  | { type: 'EmailSignInRequested'; data: { signInId: string; email: string; secretHash: string; expiresAt: string; requestedAt: string } }
  | { type: 'EmailSignInCompleted'; data: { signInId: string; userId: string; completedAt: string } }
  /** A link followed when it could no longer sign in: used before, or expired. */
  | { type: 'EmailSignInRefused'; data: { signInId: string; reason: 'used' | 'expired'; refusedAt: string } };
