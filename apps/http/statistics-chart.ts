/**
 * The statistics' bar charts as HTML and SVG text, drawn the same by Relay (the hour and day pages,
 * the live page's first paint: no script needed) and by the live page's script
 * (dashboard/src/live.ts imports this module), so that a live update redraws exactly what the
 * server drew. Pure: strings in, strings out; no DOM, no Node.
 *
 * What a chart group holds, for one scope (all apps, or one app) over one window:
 * - one chart per figure (accepted, delivered, failed, abandoned, received), all on one scale (the
 *   largest bar of the group, or one given for the whole page), so that 1 failure is drawn a ninth
 *   as tall as 9 accepted;
 * - a value axis with labelled ticks and a time axis with labelled times (UTC: the server cannot
 *   know the reader's zone), each bar titled with its time span and exact count;
 * - a caption per chart saying what it shows ("Accepted in the last hour, per minute: 9 in all");
 * - the figures of every bar that has any, as a table, for the keyboard and screen readers.
 *
 * The SVG has no viewBox: its x positions are percentages of its width and its y positions pixels,
 * so that it stretches to any width while its text keeps its size (the value labels stand in the
 * figure's left padding).
 */

export const CHARTED = ['accepted', 'delivered', 'failed', 'abandoned', 'received'] as const;
export type ChartedFigure = (typeof CHARTED)[number];
export const FIGURE_NAMES: Readonly<Record<ChartedFigure, string>> = { accepted: 'Accepted', delivered: 'Delivered', failed: 'Failed', abandoned: 'Abandoned', received: 'Received' };

/** One value per bar, oldest first, per figure. */
export type ChartSeries = Readonly<Record<ChartedFigure, readonly number[]>>;

/** Where the bars stand in time: bar i covers [fromMs + i × stepMs, fromMs + (i + 1) × stepMs). */
export interface ChartFrame {
  readonly window: 'hour' | 'day';
  readonly fromMs: number;
  readonly stepMs: number;
  readonly bars: number;
}

const HOUR_MS = 3_600_000;
/** The day's 5-minute buckets are drawn summed by 12: a bar per hour. */
const DAY_BUCKETS_PER_BAR = 12;

/** A window's series as bars: the hour's minutes as they are, the day's 5 minutes summed by hour. */
export const barsOf = (
  series: Readonly<Record<ChartedFigure, readonly number[]>>,
  window: 'hour' | 'day',
  fromMs: number,
  bucketMs: number,
): { frame: ChartFrame; series: ChartSeries } => {
  const per = window === 'day' ? DAY_BUCKETS_PER_BAR : 1;
  const summed = {} as Record<ChartedFigure, number[]>;
  for (const figure of CHARTED) {
    const values = series[figure];
    const bars: number[] = [];
    for (let i = 0; i < values.length; i += per) bars.push(values.slice(i, i + per).reduce((a, b) => a + b, 0));
    summed[figure] = bars;
  }
  return { frame: { window, fromMs, stepMs: bucketMs * per, bars: summed.accepted.length }, series: summed };
};

const escape = (text: string): string => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** "12:04", in UTC. */
export const clock = (ms: number): string => new Date(ms).toISOString().slice(11, 16);
const span = (frame: ChartFrame, i: number) => `${clock(frame.fromMs + i * frame.stepMs)}–${clock(frame.fromMs + (i + 1) * frame.stepMs)} UTC`;
const unit = (frame: ChartFrame) => (frame.window === 'hour' ? 'minute' : 'hour');
/** "in the last hour, per minute" / "in the last 24 hours, per hour". */
export const windowPhrase = (frame: ChartFrame): string => (frame.window === 'hour' ? 'in the last hour, per minute' : 'in the last 24 hours, per hour');

/** The top of a scale that holds `max`: 1, 2 or 5 times a power of ten per tick, at most 5 ticks above 0. */
export const scaleOf = (max: number): { top: number; step: number } => {
  const wanted = Math.max(1, max) / 5;
  const power = 10 ** Math.floor(Math.log10(wanted));
  const step = Math.max(1, [1, 2, 5, 10].map((m) => m * power).find((s) => s >= wanted) ?? 10 * power);
  return { top: Math.max(step, Math.ceil(max / step) * step), step };
};

/** The largest bar of any of the series (the group's, or the page's, scale). */
export const largest = (...groups: ReadonlyArray<ChartSeries>): number => Math.max(0, ...groups.flatMap((series) => CHARTED.flatMap((figure) => series[figure])));

/** A tick label, short: 950, 1.5k, 2M. */
const short = (n: number): string => (n >= 1e6 ? `${+(n / 1e6).toFixed(1)}M` : n >= 1e4 ? `${+(n / 1e3).toFixed(1)}k` : String(n));

const HEIGHT = 150;
const PLOT_TOP = 8;
const PLOT_BOTTOM = 122;
const PLOT = PLOT_BOTTOM - PLOT_TOP;
const pct = (fraction: number) => `${(fraction * 100).toFixed(3)}%`;

const valueAxis = (top: number, step: number) => {
  let out = '';
  for (let v = 0; v <= top; v += step) {
    const y = (PLOT_BOTTOM - (v / top) * PLOT).toFixed(2);
    out += `<line x1="0" x2="100%" y1="${y}" y2="${y}"/><text x="-6" y="${y}" dy=".32em" text-anchor="end" data-tick>${short(v)}</text>`;
  }
  return `<g class="axis" aria-hidden="true">${out}</g>`;
};

const timeAxis = (frame: ChartFrame) => {
  const every = frame.window === 'hour' ? 10 * 60_000 : 4 * HOUR_MS;
  const toMs = frame.fromMs + frame.bars * frame.stepMs;
  let out = '';
  for (let t = Math.ceil(frame.fromMs / every) * every; t <= toMs; t += every) {
    const x = pct((t - frame.fromMs) / (toMs - frame.fromMs));
    out += `<line x1="${x}" x2="${x}" y1="${PLOT_BOTTOM}" y2="${PLOT_BOTTOM + 5}"/><text x="${x}" y="${PLOT_BOTTOM + 19}" text-anchor="middle" data-time>${clock(t)}</text>`;
  }
  return `<g class="axis" aria-hidden="true">${out}</g>`;
};

const bars = (figure: ChartedFigure, values: readonly number[], frame: ChartFrame, top: number) => {
  const width = 1 / frame.bars;
  return values
    .map((v, i) => {
      if (v <= 0) return '';
      const h = (v / top) * PLOT;
      return `<rect x="${pct(i * width + width * 0.1)}" y="${(PLOT_BOTTOM - h).toFixed(2)}" width="${pct(width * 0.8)}" height="${h.toFixed(2)}" data-value="${v}"><title>${span(frame, i)}: ${v} ${figure}</title></rect>`;
    })
    .join('');
};

const chart = (figure: ChartedFigure, values: readonly number[], frame: ChartFrame, top: number, step: number) => {
  const total = values.reduce((a, b) => a + b, 0);
  const caption = `${FIGURE_NAMES[figure]} ${windowPhrase(frame)}: ${total} in all`;
  const most = Math.max(0, ...values);
  const summary = most === 0 ? `${caption}.` : `${caption}; the most in one ${unit(frame)}: ${most}, at ${span(frame, values.indexOf(most))}.`;
  return `<figure class="chart" data-chart="${figure}"><figcaption>${caption}</figcaption><svg role="img" aria-label="${escape(summary)}" width="100%" height="${HEIGHT}">${valueAxis(top, step)}${timeAxis(frame)}<g class="bars">${bars(figure, values, frame, top)}</g></svg></figure>`;
};

/** Every bar that has any figure, as a table (times in UTC); the empty ones are left out, and the table says so. */
const figuresTable = (series: ChartSeries, frame: ChartFrame, subject: string) => {
  const rows: string[] = [];
  for (let i = 0; i < frame.bars; i++) {
    if (CHARTED.every((figure) => (series[figure][i] ?? 0) === 0)) continue;
    rows.push(`<tr><th scope="row">${span(frame, i)}</th>${CHARTED.map((figure) => `<td data-label="${FIGURE_NAMES[figure]}">${series[figure][i] ?? 0}</td>`).join('')}</tr>`);
  }
  const what = `${subject}: messages ${windowPhrase(frame)}`;
  if (rows.length === 0) return `<p class="hint">${escape(subject)}: no messages ${frame.window === 'hour' ? 'in the last hour' : 'in the last 24 hours'}.</p>`;
  return `<details class="figures"><summary>The figures of each ${unit(frame)} with messages, as a table</summary><table data-figures><caption>${escape(what)} (${unit(frame)}s without any are left out)</caption><thead><tr><th scope="col">Time</th>${CHARTED.map((f) => `<th scope="col">${FIGURE_NAMES[f]}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table></details>`;
};

/**
 * The charts of one scope: a chart per figure on one scale (`max`: the largest bar the scale must
 * hold, the group's own when not given), the scale said in words, and the figures as a table.
 */
export const chartGroup = (series: ChartSeries, frame: ChartFrame, subject: string, max = largest(series)): string => {
  const { top, step } = scaleOf(max);
  return `<div class="chart-group" data-scale-top="${top}"><p class="hint">${escape(subject)}: times in UTC. Every chart on this page has the same scale, 0 to ${top} messages per ${unit(frame)}; point at a bar for its time and count.</p><div class="charts">${CHARTED.map((figure) => chart(figure, series[figure], frame, top, step)).join('')}</div>${figuresTable(series, frame, subject)}</div>`;
};

/** What Failed and Abandoned count, in the pages' words (they overlap: a failed message may be given up later). */
export const FIGURES_EXPLAINED = `<dl class="figures-explained">
<dt>Accepted</dt><dd>messages a send accepted.</dd>
<dt>Delivered</dt><dd>messages handed to their messenger.</dd>
<dt>Failed</dt><dd>messages whose delivery failed at least once, each counted once, at its first failed attempt. A failed message is tried again: it may still be delivered (then it is in Delivered too) or be given up (then it is in Abandoned too).</dd>
<dt>Abandoned</dt><dd>messages Relay gave up on. One given up after its last failed attempt is also in Failed; one given up after waiting too long for its bot's identity, without an attempt, is not. So Failed and Abandoned are not to be added up.</dd>
<dt>Waiting</dt><dd>accepted, and neither delivered nor abandoned yet (now, not over the window).</dd>
<dt>Received</dt><dd>messages contacts sent to the apps' bots.</dd>
</dl>`;

/** What the live page shows and each update of its stream carries: the last hour of a scope, and of each of its apps. */
export interface LiveFigures {
  /** The window's totals and the gauges now (the page's totals table). */
  readonly totals: Readonly<Record<string, number>>;
  /** "All apps", or the app's name. */
  readonly subject: string;
  readonly frame: ChartFrame;
  readonly series: ChartSeries;
  /** On the page of all apps: each app's own charts (the busiest first). */
  readonly apps: ReadonlyArray<{ readonly appId: string; readonly name: string; readonly series: ChartSeries }>;
  /** How many apps with figures were left out of `apps` (beyond the page's limit). */
  readonly appsLeftOut: number;
}

/** The live page's charts: the scope's, then each app's, all on the one scale of the page. */
export const liveCharts = (figures: LiveFigures): string => {
  const max = largest(figures.series, ...figures.apps.map((app) => app.series));
  const apps = figures.apps
    .map((app) => `<section class="app-charts"><h3><a href="/dashboard/stats/live?app=${encodeURIComponent(app.appId)}">${escape(app.name)}</a></h3>${chartGroup(app.series, figures.frame, app.name, max)}</section>`)
    .join('');
  const leftOut = figures.appsLeftOut > 0 ? `<p class="hint">${figures.appsLeftOut} quieter app${figures.appsLeftOut === 1 ? ' is' : 's are'} not drawn here: see the statistics of all apps.</p>` : '';
  return `${chartGroup(figures.series, figures.frame, figures.subject, max)}${figures.apps.length > 0 ? `<h2>Per app</h2>${apps}${leftOut}` : ''}`;
};
