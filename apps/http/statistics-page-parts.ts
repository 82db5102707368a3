/**
 * What the statistics pages (statistics-pages.ts: the hour and day; statistics-live.ts: the live
 * page) have in common: the page around them, the totals table and their words.
 */
import type { FastifyReply } from 'fastify';
import type { Totals } from '../../projections/statistics/views.ts';
import { DASHBOARD_CSP, FAVICON_LINK } from './dashboard-pages.ts';
import { escapeHtml as escape } from './dashboard-session.ts';

/** The figures a page shows, in its words. */
export const SHOWN: ReadonlyArray<readonly [keyof Totals, string]> = [
  ['accepted', 'Accepted'],
  ['delivered', 'Delivered'],
  ['failed', 'Failed'],
  ['abandoned', 'Abandoned'],
  ['waiting', 'Waiting'],
  ['received', 'Received'],
];

export const frame = (title: string, body: string, script?: string): string => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Relay</title>${FAVICON_LINK}<link rel="stylesheet" href="/dashboard/assets/app.css">${script ? `<script type="module" src="${script}"></script>` : ''}
</head><body><a class="skip" href="#main">Skip to content</a><header><a class="brand" href="/dashboard/apps">Relay</a><nav aria-label="Dashboard"><ul>
<li><a href="/dashboard/apps">Apps</a></li><li><a href="/dashboard/keys">API keys</a></li><li><a href="/dashboard/notifications">Notifications</a></li><li><a href="/dashboard/billing">Billing</a></li><li><a href="/dashboard/stats" aria-current="page">Statistics</a></li><li><a href="/dashboard/account">Account</a></li>
</ul></nav></header><main id="main" tabindex="-1">${body}</main></body></html>
`;

export const totalsTable = (totals: Totals, caption: string): string => `<table data-totals><caption>${escape(caption)}</caption><thead><tr>${SHOWN.map(([, label]) => `<th scope="col">${label}</th>`).join('')}</tr></thead>
<tbody><tr>${SHOWN.map(([figure, label]) => `<td data-figure="${figure}" data-label="${label}">${totals[figure]}</td>`).join('')}</tr></tbody></table>`;

export const UNAVAILABLE = '<h1>Statistics are not available right now</h1><p>Relay is starting or restarting the part that counts them. Try again in a moment: <a href="">reload</a>.</p>';

export const htmlReply = (reply: FastifyReply, status: number, page: string): FastifyReply =>
  reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').header('content-security-policy', DASHBOARD_CSP).send(page);

export const signInFirst = (reply: FastifyReply): FastifyReply => reply.code(303).header('location', '/dashboard').header('cache-control', 'no-store').send();
