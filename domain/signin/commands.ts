export type SignInCommand =
  | { type: 'RequestEmailSignIn'; data: { signInId: string; email: string; secretHash: string; expiresAt: Date; now: Date } }
  | { type: 'CompleteEmailSignIn'; data: { secretHash: string; userId: string; now: Date } };
