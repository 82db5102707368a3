import { createHash, randomBytes } from 'node:crypto';
import { TEXT_LIMITS, textProblem } from '../../../domain/shared/text.ts';
import { userDecider, userStreamName } from '../../../domain/user/decider.ts';
import { hashKey } from '../../../infra/crypto/keys.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import type { RelayContext } from '../../boot/context.ts';
import { newId } from '../../../infra/ids/new-id.ts';

/** A user's id follows from their e-mail, so creating a session twice never makes two users. */
export const userIdForEmail = (email: string) => `usr_${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 24)}`;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** An e-mail address as Relay keeps it: trimmed, lower-cased, one line, at most 254 characters. */
export const normaliseEmail = (email: string): string => {
  const normalised = email.trim().toLowerCase();
  if (!EMAIL.test(normalised) || textProblem(normalised, TEXT_LIMITS.email, true)) throw new Error(`Not an e-mail address: ${JSON.stringify(email.slice(0, 300))}`);
  return normalised;
};

/** Operator bootstrap: creates the user if missing and starts a dashboard session; returns its token. */
export const createSession = async (ctx: RelayContext, email: string, name: string | undefined): Promise<string> => {
  const normalised = normaliseEmail(email);
  const userId = userIdForEmail(normalised);
  const stream = userStreamName(userId);
  const metadata = { actor: 'cli', correlationId: newId.session() };
  const registered = await handleCommand(
    ctx.store,
    stream,
    userDecider,
    { type: 'RegisterUser', data: { userId, email: normalised, name: name?.trim() || normalised.split('@')[0]!, now: new Date() } },
    metadata,
  );
  if (!registered.ok) throw new Error(registered.error.message);
  const token = `rls_${randomBytes(32).toString('base64url')}`;
  const now = new Date();
  const started = await handleCommand(
    ctx.store,
    stream,
    userDecider,
    {
      type: 'StartSession',
      data: { sessionId: newId.session(), tokenHash: hashKey(token), expiresAt: new Date(now.getTime() + ctx.config.SESSION_TTL_HOURS * 3_600_000), now },
    },
    metadata,
  );
  if (!started.ok) throw new Error(started.error.message);
  return token;
};

/**
 * Operator revocation: ends one session of the user (`sessionId`), or all of them. Effective at
 * once in every process (the read models follow the event). Returns how many sessions ended.
 */
export const revokeSessions = async (ctx: RelayContext, email: string, sessionId: string | undefined): Promise<number> => {
  const userId = userIdForEmail(normaliseEmail(email));
  if (!ctx.models.users.user(userId)) throw new Error(`No user with the e-mail ${normaliseEmail(email)}`);
  const now = new Date();
  const result = await handleCommand(
    ctx.store,
    userStreamName(userId),
    userDecider,
    sessionId === undefined ? { type: 'EndAllSessions', data: { reason: 'revoked', now } } : { type: 'EndSession', data: { sessionId, reason: 'revoked', now } },
    { actor: 'cli', correlationId: newId.session() },
  );
  if (!result.ok) throw new Error(result.error.message);
  return result.events.length;
};

/** The live sessions of a user, for an operator deciding what to revoke. */
export const listSessions = (ctx: RelayContext, email: string) => {
  const userId = userIdForEmail(normaliseEmail(email));
  if (!ctx.models.users.user(userId)) throw new Error(`No user with the e-mail ${normaliseEmail(email)}`);
  return ctx.models.users.sessionsOf(userId, Date.now()).map((s) => ({
    sessionId: s.sessionId,
    startedAt: new Date(s.startedAt).toISOString(),
    expiresAt: new Date(s.expiresAt).toISOString(),
  }));
};
