import { fastifyCookie } from '@fastify/cookie';
import type { FastifyInstance } from 'fastify';
import { hashKey } from '../../infra/crypto/keys.ts';
import type { RelayContext } from '../boot/context.ts';

const escape = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

const WHY: Record<string, string> = {
  invalid: 'This sign-in link is not valid.',
  used: 'This sign-in link was used already: ask for a new one.',
  expired: 'This sign-in link has expired: ask for a new one.',
};

const MAILED = '<p>Ask for a sign-in link with <code>POST /dashboard/auth/email</code> and <code>{"email": "you@example.com"}</code>, then follow the link in the mail.</p>';
const NO_MAIL_SERVER =
  '<p>This Relay has no mail server (<code>SMTP_URL</code>), so it cannot mail sign-in links. Follow the one-time link <code>npm start</code> printed for the operator, or make one in a terminal on this machine with <code>npx relay session link --email you@example.com</code>.</p>';

const page = (body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relay</title><style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}code{background:#f3f3f3;padding:0 .2em}</style>
</head><body><h1>Relay</h1>${body}</body></html>
`;

/**
 * `/dashboard`: where a sign-in link lands, until the web dashboard exists. It says whether the
 * browser is signed in (and as whom), why a link did not sign in, and how to use the account API
 * with the `relay_session` cookie.
 */
export const dashboardHome = (ctx: RelayContext) => async (app: FastifyInstance) => {
  if (!app.hasDecorator('parseCookie')) await app.register(fastifyCookie, { hook: false });
  app.get('/dashboard', { schema: { hide: true } }, async (request, reply) => {
    const token = request.headers.cookie ? app.parseCookie(request.headers.cookie).relay_session : undefined;
    const signedIn = token ? ctx.models.users.session(hashKey(token), Date.now()) : undefined;
    const reason = (request.query as Record<string, unknown>).signin;
    const why = typeof reason === 'string' ? WHY[reason] : undefined;
    const body = signedIn
      ? `<p>You are signed in as <strong>${escape(signedIn.user.email)}</strong>.</p>
<p>The account API is at <code>/dashboard/api/dashboard</code> (for example <code>GET /dashboard/api/dashboard/apps</code>); this browser sends its <code>relay_session</code> cookie with each request. Sign out with <code>POST /dashboard/auth/logout</code>.</p>`
      : `${why ? `<p><strong>${escape(why)}</strong></p>` : ''}<p>You are not signed in.</p>${ctx.config.SMTP_URL ? MAILED : NO_MAIL_SERVER}`;
    return reply.code(200).type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page(body));
  });
};
