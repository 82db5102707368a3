import type { FastifyReply, FastifyRequest } from 'fastify';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { UserView } from '../../projections/users/users-projection.ts';
import type { RelayContext } from '../shared/context.ts';

export const SESSION_REQUIRED = { success: false, error: 'Session token is required' } as const;

/** The user of the `X-Session-Token` the proxy set; a missing, unknown or expired one answers 400. */
export const requireUser = (ctx: RelayContext, request: FastifyRequest, reply: FastifyReply): UserView | undefined => {
  const token = request.headers['x-session-token'];
  const user = typeof token === 'string' && token !== '' ? ctx.models.users.sessionUser(hashKey(token), Date.now()) : undefined;
  if (!user) void reply.code(400).send(SESSION_REQUIRED);
  return user;
};
