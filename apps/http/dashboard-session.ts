/**
 * What the dashboard's own routes (pages, statistics, Signal linking: outside the proxied account
 * API) know of a browser: the user of its `relay_session` cookie's live session, and the page
 * helpers they share.
 */
import { fastifyCookie } from '@fastify/cookie';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { UserView } from '../../projections/users/users-projection.ts';
import type { RelayContext } from '../boot/context.ts';

/** The cookie that carries a dashboard session's token. */
export const SESSION_COOKIE = 'relay_session';

/** Registers the cookie parser on `app` (on demand only: no hook) unless a parent did. */
export const withCookies = async (app: FastifyInstance): Promise<void> => {
  if (!app.hasDecorator('parseCookie')) await app.register(fastifyCookie, { hook: false });
};

/** The user of the request's session cookie, while that session lives. */
export const cookieUser = (ctx: RelayContext, app: FastifyInstance, request: FastifyRequest): UserView | undefined => {
  const token = request.headers.cookie ? app.parseCookie(request.headers.cookie)[SESSION_COOKIE] : undefined;
  return token ? ctx.models.users.session(hashKey(token), Date.now())?.user : undefined;
};

export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
