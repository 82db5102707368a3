/**
 * The web dashboard's pages under `/dashboard` (outside the account API's proxied prefix): one
 * HTML page for every dashboard path, whose script (dashboard/src, built into dashboard/dist by
 * `npm run build`) calls the account API through the proxy with the session cookie. The page
 * itself is useful without its script: it says whether the browser is signed in, why a sign-in
 * link did not sign in, and how to sign in on this install (with or without a mail server).
 * Nothing is loaded from elsewhere: the Content-Security-Policy allows this origin only.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fs from 'node:fs';
import path from 'node:path';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import type { Config } from '../services/config.ts';
import type { RelayContext } from '../services/context.ts';
import { PROJECT_ROOT } from '../services/running-from.ts';
import { cookieUser, escapeHtml, withCookies } from './dashboard-session.ts';

const WHY: Record<string, string> = {
  invalid: 'This sign-in link is not valid.',
  used: 'This sign-in link was used already: ask for a new one.',
  expired: 'This sign-in link has expired: ask for a new one.',
};

const MAILED = '<p>Ask for a sign-in link with <code>POST /dashboard/auth/email</code> and <code>{"email": "you@example.com"}</code>, then follow the link in the mail.</p>';
const NO_MAIL_SERVER =
  '<p>This Relay has no mail server (<code>SMTP_URL</code>), so it cannot mail sign-in links. Follow the one-time link <code>npm start</code> printed for the operator, or make one in a terminal on this machine with <code>npx relay session link --email you@example.com</code>.</p>';

/** What the page a sign-in link opens says without its script (the link is used only by its button's POST). */
const CONFIRM =
  '<p>To finish signing in with the link you followed, press <strong>Sign in</strong> on this page. It needs JavaScript: the link alone signs nobody in, so that a mail scanner or another site that opens it cannot use it up or sign this browser in.</p>';

/** The dashboard's page paths (the script shows the right page for each). */
export const DASHBOARD_PAGES = ['/dashboard', '/dashboard/sign-in', '/dashboard/apps', '/dashboard/apps/:appId', '/dashboard/keys', '/dashboard/notifications', '/dashboard/billing', '/dashboard/account'] as const;

const ASSETS_DIR = path.join(PROJECT_ROOT, 'dashboard/dist');
const ASSETS: Readonly<Record<string, string>> = {
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'app.js.map': 'application/json',
  'app.css.map': 'application/json',
};

/** The dashboard's icon (linked from every page, so that no browser asks for a /favicon.ico that is not there). */
const FAVICON =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="7" fill="#0b57d0"/><path d="M7 10h13l-4-4M25 22H12l4 4" fill="none" stroke="#fff" stroke-width="3" stroke-linecap="round" stroke-linejoin="round"/></svg>';
export const FAVICON_LINK = '<link rel="icon" type="image/svg+xml" href="/dashboard/assets/favicon.svg">';

/**
 * What runs on Relay's simulator instead of the real thing, as openConnectors (apps/boot/connectors.ts)
 * and the payment processor choose: a messenger without its daemon or network configured, and
 * payments with PAYMENT_PROCESSOR=simulator. The pages show it as a badge (data-simulated).
 */
export const simulatedParts = (config: Config): string[] => [
  ...MESSENGERS.filter((m) => (m === 'signal' ? !config.SIGNAL_CLI_URL : m === 'simplex' ? !config.SIMPLEX_WS_URL : config.SESSION_NETWORK !== 'on')),
  ...(config.PAYMENT_PROCESSOR === 'simulator' ? ['payments'] : []),
];

const NOT_FOUND = '<h1>Page not found</h1><p>There is no dashboard page at this address. <a href="/dashboard">Go to the dashboard</a>.</p>';

export const DASHBOARD_CSP = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'self'; base-uri 'none'; object-src 'none'";

/**
 * The page every dashboard path gets; its root says what the script needs before it asks anything:
 * whether this install mails (data-mail), whether the browser's cookie has a live session
 * (data-signed-in: when it has none, the script shows the sign-in page without asking the account
 * API, whose answer would be a 400), and what is simulated (data-simulated, space-separated).
 */
const page = (root: { mail: boolean; signedIn: boolean; simulated: readonly string[] }, body: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>Relay</title>${FAVICON_LINK}<link rel="stylesheet" href="/dashboard/assets/app.css"><script type="module" src="/dashboard/assets/app.js"></script>
</head><body><div id="app" data-mail="${root.mail ? 'on' : 'off'}" data-signed-in="${root.signedIn ? 'on' : 'off'}" data-simulated="${root.simulated.join(' ')}"><main id="main" tabindex="-1">${body.startsWith('<h1>') ? '' : '<h1>Relay</h1>'}${body}</main></div></body></html>
`;

export const dashboardPages = (ctx: RelayContext) => async (app: FastifyInstance) => {
  await withCookies(app);
  const mail = ctx.config.SMTP_URL !== undefined;
  const simulated = simulatedParts(ctx.config);
  const userOf = (request: FastifyRequest) => cookieUser(ctx, app, request);
  const send = (reply: FastifyReply, status: number, signedIn: boolean, body: string) =>
    reply
      .code(status)
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .header('content-security-policy', DASHBOARD_CSP)
      .header('referrer-policy', 'same-origin')
      .send(page({ mail, signedIn, simulated }, body));
  const shell = async (request: FastifyRequest, reply: FastifyReply) => {
    const user = await userOf(request);
    const reason = (request.query as Record<string, unknown>).signin;
    const why = typeof reason === 'string' ? WHY[reason] : undefined;
    const confirming = request.routeOptions.url === '/dashboard/sign-in';
    const body = confirming
      ? `${user ? `<p>You are signed in as <strong>${escapeHtml(user.email)}</strong>.</p>` : ''}${CONFIRM}`
      : user
      ? `<p>You are signed in as <strong>${escapeHtml(user.email)}</strong>.</p>
<p>The account API is at <code>/dashboard/api/dashboard</code> (for example <code>GET /dashboard/api/dashboard/apps</code>); this browser sends its <code>relay_session</code> cookie with each request. Sign out with <code>POST /dashboard/auth/logout</code>.</p>`
      : `${why ? `<p><strong>${escapeHtml(why)}</strong></p>` : ''}<p>You are not signed in.</p>${mail ? MAILED : NO_MAIL_SERVER}`;
    return send(reply, 200, user !== undefined, body);
  };
  for (const url of DASHBOARD_PAGES) app.get(url, { schema: { hide: true } }, shell);
  // Any other page under /dashboard: the dashboard's own not-found page (the API areas keep their JSON 404).
  app.get('/dashboard/*', { schema: { hide: true } }, async (request, reply) => {
    if (/^\/dashboard\/api(\/|$)/.test(request.url)) return reply.code(404).send({ error: 'Not found' });
    return send(reply, 404, (await userOf(request)) !== undefined, NOT_FOUND);
  });
  app.get('/dashboard/assets/favicon.svg', { schema: { hide: true } }, async (_request, reply) =>
    reply.code(200).type('image/svg+xml').header('cache-control', 'public, max-age=86400').send(FAVICON),
  );

  app.get<{ Params: { file: string } }>('/dashboard/assets/:file', { schema: { hide: true } }, async (request, reply) => {
    const type = ASSETS[request.params.file];
    const file = type ? path.join(ASSETS_DIR, request.params.file) : undefined;
    if (!file || !fs.existsSync(file)) return reply.code(404).send({ error: 'Not found' });
    return reply.code(200).type(type!).header('cache-control', 'no-cache').send(fs.createReadStream(file));
  });
};
