/**
 * The dashboard's statistics, rendered by Relay (the interface keeps them outside the account
 * API's prefix): `/dashboard/stats` for all of a user's apps, `/dashboard/stats/apps/:appId` for
 * one, each over the last hour (per minute) or the last 24 hours (per hour), with SVG charts on one
 * scale (statistics-chart.ts) that need no script; and the live page (statistics-live.ts). Signed
 * in by the session cookie; another user's app is not found. Counts only: no body, contact id or
 * message id is in the model or on a page.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { isStatisticsWindow, type StatisticsWindow } from '../../domain/statistics/buckets.ts';
import type { StatisticsView } from '../../projections/statistics/views.ts';
import type { StatisticsSource } from '../read-models/statistics-model.ts';
import type { RelayContext } from '../services/context.ts';
import { cookieUser, escapeHtml as escape, withCookies } from './dashboard-session.ts';
import { barsOf, chartGroup, FIGURES_EXPLAINED } from './statistics-chart.ts';
import { liveStatistics } from './statistics-live.ts';
import { frame, htmlReply as html, SHOWN, signInFirst, totalsTable, UNAVAILABLE } from './statistics-page-parts.ts';

const MESSENGER_NAMES: Record<string, string> = { signal: 'Signal', simplex: 'SimpleX', session: 'Session' };
const WINDOW_NAMES: Record<StatisticsWindow, string> = { hour: 'last hour', day: 'last 24 hours' };

const windowLinks = (path: string, window: StatisticsWindow) =>
  `<p>${(['hour', 'day'] as const)
    .map((w) => (w === window ? `<strong>Last ${w}</strong>` : `<a href="${path}?window=${w}">Last ${w}</a>`))
    .join(' · ')} · <a href="/dashboard/stats/live${path.startsWith('/dashboard/stats/apps/') ? `?app=${encodeURIComponent(path.split('/').at(-1)!)}` : ''}">Live</a></p>`;

/** The scope's charts, under a heading, and what the figures count. */
const charts = (view: StatisticsView, subject: string) => {
  const { frame: bars, series } = barsOf(view.total.series, view.window, Date.parse(view.from), view.bucketMs);
  return `<h2>Charts</h2>${chartGroup(series, bars, subject)}<h2>What the figures count</h2>${FIGURES_EXPLAINED}`;
};

const byMessenger = (view: StatisticsView) =>
  Object.entries(view.byMessenger)
    .map(([messenger, breakdown]) => `<h3>${escape(MESSENGER_NAMES[messenger] ?? messenger)}</h3>${totalsTable(breakdown.totals, `${MESSENGER_NAMES[messenger] ?? messenger}, ${WINDOW_NAMES[view.window]}`)}`)
    .join('');

export const statisticsPages = (ctx: RelayContext, statistics: StatisticsSource) => async (app: FastifyInstance) => {
  await withCookies(app);
  const userOf = (request: FastifyRequest) => cookieUser(ctx, app, request);
  const windowOf = (request: FastifyRequest): StatisticsWindow => {
    const asked = (request.query as Record<string, unknown>).window;
    return isStatisticsWindow(asked) ? asked : 'hour';
  };
  const appName = (appId: string) => ctx.models.apps.app(appId)?.settings.name ?? appId;

  app.get('/dashboard/stats', { schema: { hide: true } }, async (request, reply) => {
    const user = await userOf(request);
    if (!user) return signInFirst(reply);
    const window = windowOf(request);
    const view = await statistics.query({ scope: 'user', userId: user.id, window }).catch(() => undefined);
    if (!view) return html(reply, 503, frame('Statistics', UNAVAILABLE));
    const apps = Object.entries(view.apps);
    const body = `<h1>Statistics</h1>${windowLinks('/dashboard/stats', window)}
${totalsTable(view.total.totals, `All apps, ${WINDOW_NAMES[window]}`)}
${charts(view, 'All apps')}
<h2>Per app</h2>${
      apps.length === 0
        ? '<p>No traffic in this window.</p>'
        : `<table data-apps><caption>Each app, ${WINDOW_NAMES[window]}</caption><thead><tr><th scope="col">App</th>${SHOWN.map(([, l]) => `<th scope="col">${l}</th>`).join('')}</tr></thead><tbody>${apps
            .map(([appId, totals]) => `<tr><th scope="row"><a href="/dashboard/stats/apps/${encodeURIComponent(appId)}?window=${window}">${escape(appName(appId))}</a></th>${SHOWN.map(([f, l]) => `<td data-label="${l}">${totals[f]}</td>`).join('')}</tr>`)
            .join('')}</tbody></table>`
    }
<h2>Per messenger</h2>${byMessenger(view) || '<p>No traffic in this window.</p>'}`;
    return html(reply, 200, frame('Statistics', body));
  });

  app.get<{ Params: { appId: string } }>('/dashboard/stats/apps/:appId', { schema: { hide: true } }, async (request, reply) => {
    const user = await userOf(request);
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
    const name = appName(request.params.appId);
    const body = `<h1>Statistics of ${escape(name)}</h1>${windowLinks(path, window)}
${totalsTable(view.total.totals, `${name}, ${WINDOW_NAMES[window]}`)}
${charts(view, name)}
<h2>Per messenger</h2>${byMessenger(view) || '<p>No traffic in this window.</p>'}`;
    return html(reply, 200, frame('Statistics', body));
  });

  liveStatistics(app, ctx, statistics, userOf, appName);
};
