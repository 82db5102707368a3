import { failLimited } from './errors.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../services/config.ts';
import type { RelayContext } from '../services/context.ts';
import { startSessionFor, type StartedSession } from '../commands/start-session.ts';

/** The `relay_session` cookie: HTTP-only, same-site lax, Secure when served over HTTPS (cookieIsSecure). */
export const sessionCookie = (token: string, maxAgeSeconds: number, secure: boolean) =>
  `relay_session=${token}; Path=/; Max-Age=${maxAgeSeconds}; HttpOnly; SameSite=Lax${secure ? '; Secure' : ''}`;

/**
 * Whether the session cookie is marked Secure: always when users reach this Relay over HTTPS
 * (`PUBLIC_URL` is https: a TLS terminator that does not say so must not get a cookie a plain-HTTP
 * page could read), else when the request came over HTTPS (directly, or through a proxy that says
 * so, TRUST_PROXY). The dashboard proxy passes the protocol on in `X-Forwarded-Proto`.
 */
export const cookieIsSecure = (config: Pick<Config, 'PUBLIC_URL'>, request: FastifyRequest): boolean =>
  config.PUBLIC_URL?.toLowerCase().startsWith('https:') === true || request.headers['x-forwarded-proto'] === 'https';

/** The client as the proxy saw it. */
export const clientOf = (request: FastifyRequest) => String(request.headers['x-forwarded-for'] ?? request.ip).split(',')[0]!.trim();

/** 429 for too many sign-in attempts, with when to try again. */
export const tooManySignIns = (reply: FastifyReply, resetAt: number) => failLimited(reply, resetAt, 'Too many sign-in attempts: try again later');

/** Starts a session of the address's user (made if new), sets its cookie on the reply, and lets the read models see it. */
export const signInWithCookie = async (ctx: RelayContext, email: string, request: FastifyRequest, reply: FastifyReply): Promise<StartedSession> => {
  const { config } = ctx;
  const session = await startSessionFor(ctx.store, email, { ttlHours: config.SESSION_TTL_HOURS, metadata: { actor: 'anonymous', correlationId: request.id } });
  await ctx.projections.catchUp();
  void reply.header('set-cookie', sessionCookie(session.token, config.SESSION_TTL_HOURS * 3600, cookieIsSecure(config, request)));
  return session;
};
