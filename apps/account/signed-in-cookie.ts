import { failLimited } from './errors.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RelayContext } from '../boot/context.ts';
import { startSessionFor, type StartedSession } from '../commands/start-session.ts';

/** The `relay_session` cookie: HTTP-only, same-site lax, Secure when the request came over HTTPS. */
export const sessionCookie = (token: string, maxAgeSeconds: number, secure: boolean) =>
  `relay_session=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

/** The client as the proxy saw it. */
export const clientOf = (request: FastifyRequest) => String(request.headers['x-forwarded-for'] ?? request.ip).split(',')[0]!.trim();

/** 429 for too many sign-in attempts, with when to try again. */
export const tooManySignIns = (reply: FastifyReply, resetAt: number) => failLimited(reply, resetAt, 'Too many sign-in attempts: try again later');

/** Starts a session of the address's user (made if new), sets its cookie on the reply, and lets the read models see it. */
export const signInWithCookie = async (ctx: RelayContext, email: string, request: FastifyRequest, reply: FastifyReply): Promise<StartedSession> => {
  const { config } = ctx;
  const session = await startSessionFor(ctx.store, email, { ttlHours: config.SESSION_TTL_HOURS, metadata: { actor: 'anonymous', correlationId: request.id } });
  await ctx.projections.catchUp();
  void reply.header('set-cookie', sessionCookie(session.token, config.SESSION_TTL_HOURS * 3600, request.headers['x-forwarded-proto'] === 'https'));
  return session;
};
