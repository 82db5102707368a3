import { createHash, randomBytes } from 'node:crypto';
import { TEXT_LIMITS, textProblem } from '../../domain/shared/text.ts';
import { userDecider, userStreamName } from '../../domain/user/decider.ts';
import { hashKey } from '../../infra/crypto/keys.ts';
import { newId } from '../../infra/ids/new-id.ts';
import type { EventMetadata, EventStore } from '../../infra/event-store/port.ts';
import { handleCommand } from './handle-command.ts';

/** A user's id follows from their e-mail, so signing in twice never makes two users. */
export const userIdForEmail = (email: string) => `usr_${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 24)}`;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** An e-mail address as Relay keeps it, or undefined: trimmed, lower-cased, one line, at most 254 characters. */
export const emailOrUndefined = (email: string): string | undefined => {
  const normalised = email.trim().toLowerCase();
  return EMAIL.test(normalised) && !textProblem(normalised, TEXT_LIMITS.email, true) ? normalised : undefined;
};

/** An e-mail address as Relay keeps it (throws when it is not one). */
export const normaliseEmail = (email: string): string => {
  const normalised = emailOrUndefined(email);
  if (normalised === undefined) throw new Error(`Not an e-mail address: ${JSON.stringify(email.slice(0, 300))}`);
  return normalised;
};

export interface StartedSession {
  readonly userId: string;
  readonly sessionId: string;
  /** The `relay_session` cookie's value: only its hash is kept. */
  readonly token: string;
  readonly expiresAt: Date;
}

/** Registers the user of the address if they are new, and starts a dashboard session of theirs. */
export const startSessionFor = async (
  store: EventStore,
  email: string,
  options: { name?: string | undefined; ttlHours: number; metadata: EventMetadata },
): Promise<StartedSession> => {
  const normalised = normaliseEmail(email);
  const userId = userIdForEmail(normalised);
  const stream = userStreamName(userId);
  const registered = await handleCommand(
    store,
    stream,
    userDecider,
    { type: 'RegisterUser', data: { userId, email: normalised, name: options.name?.trim() || normalised.split('@')[0]!, now: new Date() } },
    options.metadata,
  );
  if (!registered.ok) throw new Error(registered.error.message);
  const token = `rls_${randomBytes(32).toString('base64url')}`;
  const now = new Date();
  const sessionId = newId.session();
  const expiresAt = new Date(now.getTime() + options.ttlHours * 3_600_000);
  const started = await handleCommand(store, stream, userDecider, { type: 'StartSession', data: { sessionId, tokenHash: hashKey(token), expiresAt, now } }, options.metadata);
  if (!started.ok) throw new Error(started.error.message);
  return { userId, sessionId, token, expiresAt };
};
