import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { UserView } from '../../projections/users/users-projection.ts';
import type { RelayContext } from '../shared/context.ts';

export const SESSION_REQUIRED = { success: false, error: 'Session token is required' } as const;

/**
 * The user of the `X-Session-Token` the proxy set; a missing, unknown or expired one answers 400.
 * A token not known yet may have just been created by another process (`relay session create`),
 * so the read models catch up once before the token is refused.
 */
export const requireUser = async (ctx: RelayContext, request: FastifyRequest, reply: FastifyReply): Promise<UserView | undefined> => {
  const token = request.headers['x-session-token'];
  if (typeof token !== 'string' || token === '') {
    void reply.code(400).send(SESSION_REQUIRED);
    return undefined;
  }
  const hash = hashKey(token);
  let user = ctx.models.users.sessionUser(hash, Date.now());
  if (!user) {
    await ctx.projections.catchUp();
    user = ctx.models.users.sessionUser(hash, Date.now());
  }
  if (!user) void reply.code(400).send(SESSION_REQUIRED);
  return user;
};
