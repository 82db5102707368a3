/**
 * The scale bench's curves as a picture: an SVG written here (six panels, users on a logarithmic
 * axis, a line per backend, the goal as a dashed line), rendered to PNG by Debian's Chromium through
 * playwright-core (as the dashboard's browser tests run it: test/support/browser.ts).
 */
import fs from 'node:fs';
import { chromiumPath, launchBrowser } from '../../../test/support/browser.ts';
import { LOAD_NAMES, LOAD_LABELS } from './loads.ts';
import type { PointFigures } from './measure-point.ts';
import { rebuildRate, type BackendRun } from './report.ts';

interface Series {
  readonly name: string;
  readonly color: string;
  readonly dashed: boolean;
  readonly points: ReadonlyArray<readonly [number, number]>;
}

interface Panel {
  readonly title: string;
  readonly unit: string;
  readonly goal?: number;
  readonly series: readonly Series[];
}

const W = 420;
const H = 260;
const M = { left: 62, right: 14, top: 30, bottom: 40 };
const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
const nice = (v: number) => (Math.abs(v) >= 1000 ? `${Math.round(v / 1000)}k` : Math.abs(v) >= 10 ? v.toFixed(0) : v.toFixed(1));

const panelSvg = (panel: Panel, x0: number, y0: number): string => {
  const all = panel.series.flatMap((s) => s.points).filter(([, y]) => Number.isFinite(y));
  const xs = all.map(([x]) => x);
  const ys = [...all.map(([, y]) => y), ...(panel.goal === undefined ? [] : [panel.goal])];
  const xMin = Math.log10(Math.max(1, Math.min(...xs, 1)));
  const xMax = Math.log10(Math.max(10, ...xs));
  const yMax = Math.max(1e-9, ...ys) * 1.12;
  const yMin = Math.min(0, ...ys);
  const px = (x: number) => x0 + M.left + ((Math.log10(Math.max(1, x)) - xMin) / (xMax - xMin || 1)) * (W - M.left - M.right);
  const py = (y: number) => y0 + H - M.bottom - ((y - yMin) / (yMax - yMin)) * (H - M.top - M.bottom);
  const parts: string[] = [];
  parts.push(`<rect x="${x0}" y="${y0}" width="${W}" height="${H}" fill="white" stroke="#ccc"/>`);
  parts.push(`<text x="${x0 + W / 2}" y="${y0 + 18}" text-anchor="middle" font-size="13" font-weight="bold">${esc(panel.title)}</text>`);
  for (let i = 0; i <= 4; i++) {
    const v = yMin + ((yMax - yMin) * i) / 4;
    parts.push(`<line x1="${x0 + M.left}" x2="${x0 + W - M.right}" y1="${py(v)}" y2="${py(v)}" stroke="#eee"/>`);
    parts.push(`<text x="${x0 + M.left - 6}" y="${py(v) + 4}" text-anchor="end" font-size="10">${nice(v)}</text>`);
  }
  for (let d = Math.ceil(xMin); d <= Math.floor(xMax); d++) {
    parts.push(`<line x1="${px(10 ** d)}" x2="${px(10 ** d)}" y1="${y0 + M.top}" y2="${y0 + H - M.bottom}" stroke="#eee"/>`);
    parts.push(`<text x="${px(10 ** d)}" y="${y0 + H - M.bottom + 14}" text-anchor="middle" font-size="10">${(10 ** d).toLocaleString('en')}</text>`);
  }
  parts.push(`<text x="${x0 + M.left + (W - M.left - M.right) / 2}" y="${y0 + H - 8}" text-anchor="middle" font-size="10">users</text>`);
  parts.push(`<text x="${x0 + 12}" y="${y0 + M.top + (H - M.top - M.bottom) / 2}" text-anchor="middle" font-size="10" transform="rotate(-90 ${x0 + 12} ${y0 + M.top + (H - M.top - M.bottom) / 2})">${esc(panel.unit)}</text>`);
  if (panel.goal !== undefined)
    parts.push(`<line x1="${x0 + M.left}" x2="${x0 + W - M.right}" y1="${py(panel.goal)}" y2="${py(panel.goal)}" stroke="#2a2" stroke-width="1.5" stroke-dasharray="6 4"/><text x="${x0 + W - M.right - 2}" y="${py(panel.goal) - 4}" text-anchor="end" font-size="10" fill="#2a2">goal ${nice(panel.goal)}</text>`);
  panel.series.forEach((s, i) => {
    const pts = s.points.filter(([, y]) => Number.isFinite(y));
    if (pts.length === 0) return;
    parts.push(`<polyline fill="none" stroke="${s.color}" stroke-width="2" ${s.dashed ? 'stroke-dasharray="5 3"' : ''} points="${pts.map(([x, y]) => `${px(x)},${py(y)}`).join(' ')}"/>`);
    for (const [x, y] of pts) parts.push(`<circle cx="${px(x)}" cy="${py(y)}" r="3" fill="${s.color}"/>`);
    parts.push(`<text x="${x0 + M.left + 6}" y="${y0 + M.top + 12 + i * 12}" font-size="10" fill="${s.color}">${esc(s.name)}</text>`);
  });
  return parts.join('\n');
};

/** The six panels of a run: memory, request costs against one user, the empty polls, idle CPU, restart, rebuild. */
export const panelsOf = (runs: readonly BackendRun[]): Panel[] => {
  const line = (run: BackendRun, r: number, name: string, value: (p: PointFigures) => number, color = COLORS[r % COLORS.length]!): Series => ({
    name: `${name}${runs.length > 1 ? ` (${run.name})` : ''}`,
    color,
    dashed: r > 0,
    points: run.points.map((p) => [p.users, value(p)] as const),
  });
  const each = (value: (p: PointFigures) => number, name = '') => runs.map((run, r) => line(run, r, name || run.name, value));
  return [
    { title: 'RSS after a forced collection', unit: 'MB', goal: 400, series: each((p) => p.rssMb) },
    {
      title: 'CPU per request against one user',
      unit: '% of the one-user cost',
      goal: 110,
      series: runs.flatMap((run, r) => LOAD_NAMES.map((name, i) => line(run, r, LOAD_LABELS[name], (p) => (100 * p.loads[name].cpuUs) / run.points[0]!.loads[name].cpuUs, COLORS[i]!))),
    },
    {
      title: 'Empty poll: CPU per request',
      unit: 'µs',
      series: runs.flatMap((run, r) => (['poll1', 'poll25'] as const).map((name, i) => line(run, r, LOAD_LABELS[name], (p) => p.loads[name].cpuUs, COLORS[i + 2]!))),
    },
    { title: 'Idle CPU of the pipeline thread', unit: '% of a core', goal: 2, series: each((p) => p.idle.pipeline / 10) },
    { title: 'Restart after SIGKILL → health 200', unit: 's', goal: 3, series: each((p) => p.restartMs / 1000) },
    { title: 'relay projections rebuild', unit: 'events/s', goal: 100_000, series: each(rebuildRate) },
  ];
};

export const svgOf = (runs: readonly BackendRun[], caption: string): string => {
  const panels = panelsOf(runs);
  const cols = 3;
  const width = cols * W + 20;
  const height = Math.ceil(panels.length / cols) * H + 56;
  const body = panels.map((panel, i) => panelSvg(panel, 10 + (i % cols) * W, 40 + Math.floor(i / cols) * H)).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans, sans-serif">
<rect width="100%" height="100%" fill="white"/>
<text x="${width / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(caption)}</text>
${body}
</svg>`;
};

/** Writes the SVG rendered as PNG to `file` (Debian's Chromium; the SVG beside it when there is none). */
export const renderPng = async (svg: string, file: string): Promise<string> => {
  if (!chromiumPath()) {
    const fallback = file.replace(/\.png$/, '.svg');
    fs.writeFileSync(fallback, svg);
    return fallback;
  }
  const browser = await launchBrowser();
  try {
    const page = await browser.newPage({ deviceScaleFactor: 1.5 });
    await page.setContent(`<html><body style="margin:0">${svg}</body></html>`);
    await page.locator('svg').screenshot({ path: file });
    return file;
  } finally {
    await browser.close();
  }
};
