/**
 * The dashboard's statistics, rendered by Relay itself (the interface keeps them outside the
 * account API's prefix): `/dashboard/stats` for all of a user's apps, `/dashboard/stats/apps/:appId`
 * for one, each over the last hour (per minute) or day (per hour), with SVG charts; and
 * `/dashboard/stats/live`, whose figures follow the traffic through a Server-Sent Events stream
 * (`/dashboard/stats/live/events`). Signed in by the session cookie; another user's app is not
 * found. Counts only: no body, contact id or message id is in the model or on a page.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isStatisticsWindow, type StatisticsWindow } from '../../domain/statistics/buckets.ts';
import type { Breakdown, StatisticsView, Totals } from '../../projections/statistics/views.ts';
import type { StatisticsQuery, StatisticsSource } from '../read-models/statistics-model.ts';
import type { RelayContext } from '../services/context.ts';
import { DASHBOARD_CSP, FAVICON_LINK } from './dashboard-pages.ts';
import { cookieTokenHash, cookieUser, escapeHtml as escape, sessionLives, withCookies } from './dashboard-session.ts';
import { SESSION_REQUIRED } from '../account/session.ts';

/** The figures a page shows, in its words. */
const SHOWN: ReadonlyArray<readonly [keyof Totals, string]> = [
  ['accepted', 'Accepted'],
  ['delivered', 'Delivered'],
  ['failed', 'Failed'],
  ['abandoned', 'Abandoned'],
  ['waiting', 'Waiting'],
  ['received', 'Received'],
];
const CHARTED = ['accepted', 'delivered', 'failed', 'abandoned', 'received'] as const;
const MESSENGER_NAMES: Record<string, string> = { signal: 'Signal', simplex: 'SimpleX', session: 'Session' };

/** At most this many live streams per user (the model refuses more), and one update per this many ms. */
const LIVE_EVERY_MS = 500;

const liveQuery = (userId: string, appId: unknown): Exclude<StatisticsQuery, { scope: 'messages' }> =>
  typeof appId === 'string' ? { scope: 'app', userId, appId, window: 'hour' } : { scope: 'user', userId, window: 'hour' };
const KEEP_ALIVE_MS = 15_000;
/** How often an open stream looks whether its session still lives (signed out, revoked, expired: the stream ends). */
const SESSION_CHECK_MS = 1_000;

const frame = (title: string, body: string, script?: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)} · Relay</title>${FAVICON_LINK}<link rel="stylesheet" href="/dashboard/assets/app.css">${script ? `<script type="module" src="${script}"></script>` : ''}
</head><body><a class="skip" href="#main">Skip to content</a><header><a class="brand" href="/dashboard/apps">Relay</a><nav aria-label="Dashboard"><ul>
<li><a href="/dashboard/apps">Apps</a></li><li><a href="/dashboard/keys">API keys</a></li><li><a href="/dashboard/notifications">Notifications</a></li><li><a href="/dashboard/billing">Billing</a></li><li><a href="/dashboard/stats" aria-current="page">Statistics</a></li><li><a href="/dashboard/account">Account</a></li>
</ul></nav></header><main id="main" tabindex="-1">${body}</main></body></html>
`;

const totalsTable = (totals: Totals, caption: string) => `<table data-totals><caption>${escape(caption)}</caption><thead><tr>${SHOWN.map(([, label]) => `<th scope="col">${label}</th>`).join('')}</tr></thead>
<tbody><tr>${SHOWN.map(([figure, label]) => `<td data-figure="${figure}" data-label="${label}">${totals[figure]}</td>`).join('')}</tr></tbody></table>`;

/** The day's 5-minute buckets summed by hour, for a chart of 24 bars. */
const charted = (series: readonly number[], window: StatisticsWindow): number[] => {
  if (window === 'hour') return [...series];
  const hours: number[] = [];
  for (let i = 0; i < series.length; i += 12) hours.push(series.slice(i, i + 12).reduce((a, b) => a + b, 0));
  return hours;
};

/** A bar chart as SVG, with a text summary for those who cannot see it. */
const chart = (label: string, values: readonly number[], from: Date, stepMs: number) => {
  const width = 600;
  const height = 120;
  const max = Math.max(1, ...values);
  const bar = width / Math.max(1, values.length);
  const bars = values
    .map((v, i) => {
      const h = Math.round((v / max) * (height - 20));
      const at = new Date(from.getTime() + i * stepMs).toISOString().slice(11, 16);
      return `<rect x="${(i * bar).toFixed(1)}" y="${height - h}" width="${Math.max(1, bar - 1).toFixed(1)}" height="${h}"><title>${at} UTC: ${v}</title></rect>`;
    })
    .join('');
  const total = values.reduce((a, b) => a + b, 0);
  return `<figure class="chart"><svg viewBox="0 0 ${width} ${height}" role="img" aria-label="${escape(label)}: ${total} in all, at most ${max === 1 && total === 0 ? 0 : max} in one bar" preserveAspectRatio="none" width="100%" height="${height}" fill="#0b57d0">${bars}</svg><figcaption>${escape(label)}: ${total}</figcaption></figure>`;
};

const charts = (breakdown: Breakdown, view: StatisticsView) => {
  const stepMs = view.window === 'hour' ? view.bucketMs : 3_600_000;
  return CHARTED.map((figure) => chart(`${SHOWN.find(([f]) => f === figure)![1]} per ${view.window === 'hour' ? 'minute' : 'hour'}`, charted(breakdown.series[figure], view.window), new Date(view.from), stepMs)).join('');
};

const windowLinks = (path: string, window: StatisticsWindow) =>
  `<p>${(['hour', 'day'] as const)
    .map((w) => (w === window ? `<strong>Last ${w}</strong>` : `<a href="${path}?window=${w}">Last ${w}</a>`))
    .join(' · ')} · <a href="/dashboard/stats/live${path.startsWith('/dashboard/stats/apps/') ? `?app=${encodeURIComponent(path.split('/').at(-1)!)}` : ''}">Live</a></p>`;

const byMessenger = (view: StatisticsView) =>
  Object.entries(view.byMessenger)
    .map(([messenger, breakdown]) => `<h3>${escape(MESSENGER_NAMES[messenger] ?? messenger)}</h3>${totalsTable(breakdown.totals, `${MESSENGER_NAMES[messenger] ?? messenger}, last ${view.window}`)}`)
    .join('');

const UNAVAILABLE = '<h1>Statistics are not available right now</h1><p>Relay is starting or restarting the part that counts them. Try again in a moment: <a href="">reload</a>.</p>';

export const statisticsPages = (ctx: RelayContext, statistics: StatisticsSource) => async (app: FastifyInstance) => {
  await withCookies(app);
  // Live streams end when the server closes, so that closing never waits on a page left open.
  const live = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of [...live]) end();
  });

  const userOf = (request: FastifyRequest) => cookieUser(ctx, app, request);
  const html = (reply: FastifyReply, status: number, page: string) =>
    reply.code(status).type('text/html; charset=utf-8').header('cache-control', 'no-store').header('content-security-policy', DASHBOARD_CSP).send(page);
  const signInFirst = (reply: FastifyReply) => reply.code(303).header('location', '/dashboard').header('cache-control', 'no-store').send();
  const windowOf = (request: FastifyRequest): StatisticsWindow => {
    const asked = (request.query as Record<string, unknown>).window;
    return isStatisticsWindow(asked) ? asked : 'hour';
  };
  const appName = (appId: string) => ctx.models.apps.app(appId)?.settings.name ?? appId;

  app.get('/dashboard/stats', { schema: { hide: true } }, async (request, reply) => {
    const user = userOf(request);
    if (!user) return signInFirst(reply);
    const window = windowOf(request);
    const view = await statistics.query({ scope: 'user', userId: user.id, window }).catch(() => undefined);
    if (!view) return html(reply, 503, frame('Statistics', UNAVAILABLE));
    const apps = Object.entries(view.apps);
    const body = `<h1>Statistics</h1>${windowLinks('/dashboard/stats', window)}
${totalsTable(view.total.totals, `All apps, last ${window}`)}
${charts(view.total, view)}
<h2>Per app</h2>${
      apps.length === 0
        ? '<p>No traffic in this window.</p>'
        : `<table data-apps><thead><tr><th scope="col">App</th>${SHOWN.map(([, l]) => `<th scope="col">${l}</th>`).join('')}</tr></thead><tbody>${apps
            .map(([appId, totals]) => `<tr><th scope="row"><a href="/dashboard/stats/apps/${encodeURIComponent(appId)}?window=${window}">${escape(appName(appId))}</a></th>${SHOWN.map(([f, l]) => `<td data-label="${l}">${totals[f]}</td>`).join('')}</tr>`)
            .join('')}</tbody></table>`
    }
<h2>Per messenger</h2>${byMessenger(view) || '<p>No traffic in this window.</p>'}`;
    return html(reply, 200, frame('Statistics', body));
  });

  app.get<{ Params: { appId: string } }>('/dashboard/stats/apps/:appId', { schema: { hide: true } }, async (request, reply) => {
    const user = userOf(request);
    if (!user) return signInFirst(reply);
    const window = windowOf(request);
    let view: StatisticsView | undefined;
    try {
      view = await statistics.query({ scope: 'app', userId: user.id, appId: request.params.appId, window });
    } catch {
      return html(reply, 503, frame('Statistics', UNAVAILABLE));
    }
    if (!view) return html(reply, 404, frame('Not found', '<h1>App not found</h1><p>There is no app of yours with this id. <a href="/dashboard/stats">All statistics</a>.</p>'));
    const path = `/dashboard/stats/apps/${encodeURIComponent(request.params.appId)}`;
    const body = `<h1>Statistics of ${escape(appName(request.params.appId))}</h1>${windowLinks(path, window)}
${totalsTable(view.total.totals, `Last ${window}`)}
${charts(view.total, view)}
<h2>Per messenger</h2>${byMessenger(view) || '<p>No traffic in this window.</p>'}`;
    return html(reply, 200, frame('Statistics', body));
  });

  app.get('/dashboard/stats/live', { schema: { hide: true } }, async (request, reply) => {
    const user = userOf(request);
    if (!user) return signInFirst(reply);
    const appId = (request.query as Record<string, unknown>).app;
    let view: StatisticsView | undefined;
    try {
      view = await statistics.query(liveQuery(user.id, appId));
    } catch {
      return html(reply, 503, frame('Statistics', UNAVAILABLE));
    }
    if (!view) return html(reply, 404, frame('Not found', '<h1>App not found</h1><p>There is no app of yours with this id.</p>'));
    const title = typeof appId === 'string' ? `Live: ${appName(appId)}` : 'Live: all apps';
    const body = `<h1>${escape(title)}</h1><p data-live-state role="status">Connecting…</p>${totalsTable(view.total.totals, 'The last hour, as it happens')}<p><a href="/dashboard/stats">Hour and day charts</a></p>`;
    // The dashboard's script follows the figures (dashboard/src/live.ts: one stream shared by the tabs).
    return html(reply, 200, frame(title, body, '/dashboard/assets/app.js'));
  });

  app.get('/dashboard/stats/live/events', { schema: { hide: true } }, async (request, reply) => {
    const user = userOf(request);
    if (!user) return reply.code(400).send(SESSION_REQUIRED);
    const appId = (request.query as Record<string, unknown>).app;
    const query = liveQuery(user.id, appId);
    const totals = async () => (await statistics.query(query))?.total.totals;
    let first: Totals | undefined;
    try {
      first = await totals();
    } catch {
      return reply.code(503).send({ success: false, error: 'Statistics are not available right now: try again in a moment' });
    }
    if (!first) return reply.code(404).send({ success: false, error: 'App not found' });
    let latest: Totals = first;
    let pending: NodeJS.Timeout | undefined;
    let lastSent = 0;
    const write = () => reply.raw.write(`event: totals\ndata: ${JSON.stringify(latest)}\n\n`);
    const send = () => {
      pending = undefined;
      lastSent = Date.now();
      void totals().then(
        (now) => {
          if (now) latest = now;
          write();
        },
        () => undefined, // the model is restarting: the next change sends again
      );
    };
    const subscription = statistics.onChange(user.id, (change) => {
      if (typeof appId === 'string' && !change.appIds.includes(appId)) return;
      if (pending) return;
      pending = setTimeout(send, Math.max(0, lastSent + LIVE_EVERY_MS - Date.now()));
    });
    if (!subscription.ok) return reply.code(429).header('retry-after', '5').send({ success: false, error: 'Too many live statistics pages open: close one and try again' });
    reply.hijack();
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive' });
    write();
    const keepAlive = setInterval(() => reply.raw.write(':\n\n'), KEEP_ALIVE_MS);
    // The stream lives as long as the session that opened it (issue 47): the read model follows
    // every instance's sign-outs and revocations, so this notices them within a second or two.
    const tokenHash = cookieTokenHash(app, request)!;
    const sessionCheck = setInterval(() => {
      if (!sessionLives(ctx, tokenHash)) end();
    }, SESSION_CHECK_MS);
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      live.delete(end);
      clearInterval(keepAlive);
      clearInterval(sessionCheck);
      if (pending) clearTimeout(pending);
      subscription.unsubscribe();
      reply.raw.end();
    };
    live.add(end);
    request.raw.on('close', end);
  });
};
