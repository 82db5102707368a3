/**
 * The live statistics page, `/dashboard/stats/live` (all of a user's apps, or `?app=` one), and
 * the Server-Sent Events stream it follows, `/dashboard/stats/live/events`. The page is drawn by
 * Relay (the last hour's totals and charts, readable without a script); the dashboard's script
 * (dashboard/src/live.ts, one stream shared by a browser's tabs) redraws the charts with the same
 * code (statistics-chart.ts) from each `statistics` event, whose data is the page's LiveFigures.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { StatisticsView, Totals } from '../../projections/statistics/views.ts';
import type { StatisticsSource } from '../read-models/statistics-model.ts';
import type { RelayContext } from '../services/context.ts';
import type { UserView } from '../../projections/users/users-projection.ts';
import { barsOf, liveCharts, type LiveFigures } from './statistics-chart.ts';
import { frame, htmlReply as html, signInFirst, totalsTable, UNAVAILABLE } from './statistics-page-parts.ts';
import { cookieTokenHash, escapeHtml as escape, sessionLives } from './dashboard-session.ts';
import { SESSION_REQUIRED } from '../account/session.ts';

/** One update per this many ms at most; the figures are sent again this often anyway (the hour moves on, and the connection is kept alive). */
const LIVE_EVERY_MS = 500;
const RESEND_MS = 15_000;
/** How often an open stream looks whether its session still lives (signed out, revoked, expired: the stream ends). */
const SESSION_CHECK_MS = 1_000;
/** The page of all apps draws the charts of this many apps at most, the busiest. */
const MOST_APPS = 12;

const activity = (totals: Totals) => totals.accepted + totals.delivered + totals.failed + totals.abandoned + totals.received;

const chartsOf = (view: StatisticsView) => barsOf(view.total.series, view.window, Date.parse(view.from), view.bucketMs);

export const liveStatistics = (app: FastifyInstance, ctx: RelayContext, statistics: StatisticsSource, userOf: (request: FastifyRequest) => Promise<UserView | undefined>, appName: (appId: string) => string): void => {
  // Live streams end when the server closes, so that closing never waits on a page left open.
  const live = new Set<() => void>();
  app.addHook('preClose', async () => {
    for (const end of [...live]) end();
  });

  /** The last hour of one app, or of all of a user's apps and of each of the busiest; undefined: no such app of theirs. Rejects while the model restarts. */
  const figuresOf = async (userId: string, appId: unknown): Promise<LiveFigures | undefined> => {
    if (typeof appId === 'string') {
      const view = await statistics.query({ scope: 'app', userId, appId, window: 'hour' });
      return view && { totals: view.total.totals, subject: appName(appId), ...chartsOf(view), apps: [], appsLeftOut: 0 };
    }
    const view = await statistics.query({ scope: 'user', userId, window: 'hour' });
    const active = Object.entries(view.apps)
      .filter(([, totals]) => activity(totals) > 0)
      .sort(([, a], [, b]) => activity(b) - activity(a));
    // One app alone would be drawn twice: its charts are the ones of all apps.
    const drawn = active.length > 1 ? active.slice(0, MOST_APPS) : [];
    const apps = await Promise.all(
      drawn.map(async ([id]) => {
        const own = await statistics.query({ scope: 'app', userId, appId: id, window: 'hour' });
        return own && { appId: id, name: appName(id), series: chartsOf(own).series };
      }),
    );
    return { totals: view.total.totals, subject: 'All apps', ...chartsOf(view), apps: apps.filter((a) => a !== undefined), appsLeftOut: drawn.length > 0 ? active.length - drawn.length : 0 };
  };

  app.get('/dashboard/stats/live', { schema: { hide: true } }, async (request, reply) => {
    const user = await userOf(request);
    if (!user) return signInFirst(reply);
    const appId = (request.query as Record<string, unknown>).app;
    let figures: LiveFigures | undefined;
    try {
      figures = await figuresOf(user.id, appId);
    } catch {
      return html(reply, 503, frame('Statistics', UNAVAILABLE));
    }
    if (!figures) return html(reply, 404, frame('Not found', '<h1>App not found</h1><p>There is no app of yours with this id.</p>'));
    const title = typeof appId === 'string' ? `Live: ${appName(appId)}` : 'Live: all apps';
    const body = `<h1>${escape(title)}</h1><p data-live-state role="status">Connecting…</p>${totalsTable(figures.totals as Totals, 'The last hour, as it happens')}
<p><a href="/dashboard/stats">Hour and day charts</a>, and what each figure counts.</p>
<h2>The last hour</h2><div data-live-charts>${liveCharts(figures)}</div>`;
    // The dashboard's script follows the figures (dashboard/src/live.ts: one stream shared by the tabs).
    return html(reply, 200, frame(title, body, '/dashboard/assets/app.js'));
  });

  app.get('/dashboard/stats/live/events', { schema: { hide: true } }, async (request, reply) => {
    const user = await userOf(request);
    if (!user) return reply.code(400).send(SESSION_REQUIRED);
    const appId = (request.query as Record<string, unknown>).app;
    let latest: LiveFigures | undefined;
    try {
      latest = await figuresOf(user.id, appId);
    } catch {
      return reply.code(503).send({ success: false, error: 'Statistics are not available right now: try again in a moment' });
    }
    if (!latest) return reply.code(404).send({ success: false, error: 'App not found' });
    let pending: NodeJS.Timeout | undefined;
    let lastSent = 0;
    let ended = false;
    const write = () => reply.raw.write(`event: statistics\ndata: ${JSON.stringify(latest)}\n\n`);
    const send = () => {
      pending = undefined;
      lastSent = Date.now();
      void figuresOf(user.id, appId).then(
        (now) => {
          if (now) latest = now;
          if (!ended) write();
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
    const resend = setInterval(() => {
      if (!pending) send();
    }, RESEND_MS);
    // The stream lives as long as the session that opened it (issue 47): the read model follows
    // every instance's sign-outs and revocations, so this notices them within a second or two.
    const tokenHash = cookieTokenHash(app, request)!;
    const sessionCheck = setInterval(() => {
      if (!sessionLives(ctx, tokenHash)) end();
    }, SESSION_CHECK_MS);
    const end = () => {
      if (ended) return;
      ended = true;
      live.delete(end);
      clearInterval(resend);
      clearInterval(sessionCheck);
      if (pending) clearTimeout(pending);
      subscription.unsubscribe();
      reply.raw.end();
    };
    live.add(end);
    request.raw.on('close', end);
  });
};
