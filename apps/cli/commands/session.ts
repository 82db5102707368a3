import { createHash, randomBytes } from 'node:crypto';
import { userDecider, userStreamName } from '../../../domain/user/decider.ts';
import { hashKey } from '../../../infra/crypto/keys.ts';
import { handleCommand } from '../../shared/command-handler.ts';
import type { RelayContext } from '../../shared/context.ts';
import { newId } from '../../shared/ids.ts';

/** A user's id follows from their e-mail, so creating a session twice never makes two users. */
export const userIdForEmail = (email: string) => `usr_${createHash('sha256').update(email.trim().toLowerCase()).digest('hex').slice(0, 24)}`;

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Operator bootstrap: creates the user if missing and starts a dashboard session; returns its token. */
export const createSession = async (ctx: RelayContext, email: string, name: string | undefined): Promise<string> => {
  const normalised = email.trim().toLowerCase();
  if (!EMAIL.test(normalised)) throw new Error(`Not an e-mail address: ${email}`);
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
