/**
 * A one-time sign-in link for an address: the secret is made here, only its hash goes into the
 * history (`EmailSignInRequested`), and the link is handed back to whoever delivers it: the mailer
 * of `POST /dashboard/auth/email`, or the operator's terminal when there is no mail server
 * (`relay session link`, and `relay start`'s first-sign-in line). It is never logged.
 */
import { randomBytes } from 'node:crypto';
import { signInDecider, signInStreamName } from '../../domain/signin/decider.ts';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { DomainError } from '../../domain/shared/errors.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { newId } from '../../infra/ids/new-id.ts';
import type { Config } from '../services/config.ts';
import { handleCommand } from './handle-command.ts';

export type SignInLink = { readonly ok: true; readonly link: string; readonly expiresAt: Date } | { readonly ok: false; readonly error: DomainError };

/** Where links point: PUBLIC_URL, else this machine's port. */
export const publicBase = (config: Pick<Config, 'PUBLIC_URL' | 'PORT'>): string => (config.PUBLIC_URL ?? `http://localhost:${config.PORT}`).replace(/\/+$/, '');

export const requestSignInLink = async (
  store: EventStore,
  config: Pick<Config, 'PUBLIC_URL' | 'PORT' | 'SIGN_IN_LINK_TTL_SECONDS'>,
  email: string,
  metadata: { readonly actor: string; readonly correlationId: string },
): Promise<SignInLink> => {
  const signInId = newId.signIn();
  const secret = randomBytes(32).toString('base64url');
  const now = new Date();
  const expiresAt = new Date(now.getTime() + config.SIGN_IN_LINK_TTL_SECONDS * 1000);
  const result = await handleCommand(
    store,
    signInStreamName(signInId),
    signInDecider,
    { type: 'RequestEmailSignIn', data: { signInId, email, secretHash: hashKey(secret), expiresAt, now } },
    metadata,
    { newStream: true },
  );
  if (!result.ok) return { ok: false, error: result.error };
  return { ok: true, link: `${publicBase(config)}/dashboard/auth/email/${signInId}.${secret}`, expiresAt };
};
