import { userDecider, userStreamName } from '../../../domain/user/decider.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { normaliseEmail, startSessionFor, userIdForEmail } from '../../commands/start-session.ts';
import type { RelayContext } from '../../services/context.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { requestSignInLink } from '../../commands/request-sign-in-link.ts';
import { emailOrUndefined } from '../../commands/start-session.ts';

export { normaliseEmail, userIdForEmail };

/** Operator bootstrap: creates the user if missing and starts a dashboard session; returns its token. */
export const createSession = async (ctx: RelayContext, email: string, name: string | undefined): Promise<string> =>
  (await startSessionFor(ctx.store, email, { name, ttlHours: ctx.config.SESSION_TTL_HOURS, metadata: { actor: 'cli', correlationId: newId.session() } })).token;

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

/**
 * A one-time sign-in link for an address, for an operator to hand on (no mail server needed): the
 * same link e-mail sign-in mails, valid once within SIGN_IN_LINK_TTL_SECONDS. A new user is made
 * when it is followed.
 */
export const signInLink = async (ctx: RelayContext, email: string): Promise<string> => {
  const address = emailOrUndefined(email);
  if (address === undefined) throw new Error('Invalid email: must be an e-mail address');
  const requested = await requestSignInLink(ctx.store, ctx.config, address, { actor: 'cli', correlationId: newId.signIn() });
  if (!requested.ok) throw new Error(requested.error.message);
  return requested.link;
};
