import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { SessionView, UserView } from '../../projections/users/users-projection.ts';
import type { RelayContext } from '../services/context.ts';

export const SESSION_REQUIRED = { success: false, error: 'Session token is required' } as const;

export interface SignedIn {
  readonly user: UserView;
  readonly session: SessionView;
}

/**
 * The live session of the `X-Session-Token` the proxy set, with its user; a missing, unknown,
 * ended or expired one answers 400. A token not known yet may have just been created by another
 * process (`relay session create`), so the read models catch up once before it is refused.
 */
export const requireSession = async (ctx: RelayContext, request: FastifyRequest, reply: FastifyReply): Promise<SignedIn | undefined> => {
  const token = request.headers['x-session-token'];
  if (typeof token !== 'string' || token === '') {
    void reply.code(400).send(SESSION_REQUIRED);
    return undefined;
  }
  const hash = hashKey(token);
  let found = ctx.models.users.session(hash, Date.now());
  if (!found) {
    await ctx.projections.catchUp();
    found = ctx.models.users.session(hash, Date.now());
  }
  if (!found) void reply.code(400).send(SESSION_REQUIRED);
  return found;
};

/** The user of the request's live session (see requireSession). */
export const requireUser = async (ctx: RelayContext, request: FastifyRequest, reply: FastifyReply): Promise<UserView | undefined> =>
  (await requireSession(ctx, request, reply))?.user;
