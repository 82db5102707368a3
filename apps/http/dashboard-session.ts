/**
 * What the dashboard's own routes (pages, statistics, Signal linking: outside the proxied account
 * API) know of a browser: the user of its `relay_session` cookie's live session, and the page
 * helpers they share.
 */
import { fastifyCookie } from '@fastify/cookie';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { UserView } from '../../projections/users/users-projection.ts';
import type { RelayContext } from '../services/context.ts';

/** The cookie that carries a dashboard session's token. */
export const SESSION_COOKIE = 'relay_session';

/** Registers the cookie parser on `app` (on demand only: no hook) unless a parent did. */
export const withCookies = async (app: FastifyInstance): Promise<void> => {
  if (!app.hasDecorator('parseCookie')) await app.register(fastifyCookie, { hook: false });
};

/** The hash of the request's session token (what the users' read model knows a session by), if it sent one. */
export const cookieTokenHash = (app: FastifyInstance, request: FastifyRequest): string | undefined => {
  const token = request.headers.cookie ? app.parseCookie(request.headers.cookie)[SESSION_COOKIE] : undefined;
  return token ? hashKey(token) : undefined;
};

/** Whether the session of a token hash still lives (not ended, revoked or expired). */
export const sessionLives = (ctx: RelayContext, tokenHash: string): boolean => ctx.models.users.session(tokenHash, Date.now()) !== undefined;

/**
 * The user of the request's session cookie, while that session lives. A session not known yet may
 * have just been started by another process (the CLI, another instance): the read models catch up
 * once before it is refused, as the account API's requireSession does.
 */
export const cookieUser = async (ctx: RelayContext, app: FastifyInstance, request: FastifyRequest): Promise<UserView | undefined> => {
  const tokenHash = cookieTokenHash(app, request);
  if (tokenHash === undefined) return undefined;
  const known = ctx.models.users.session(tokenHash, Date.now())?.user;
  if (known) return known;
  await ctx.projections.catchUp();
  return ctx.models.users.session(tokenHash, Date.now())?.user;
};

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
