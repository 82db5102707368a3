/**
 * The scale bench's figures as Markdown: one table per measurement point, a column per backend
 * (the embedded default; Kafka + PostgreSQL), each figure beside its goal (issue 49). Request
 * costs are compared with the same backend's one-user point of the same run.
 */
import { LOAD_LABELS, LOAD_NAMES } from './loads.ts';
import type { PointFigures } from './measure-point.ts';

export interface BackendRun {
  readonly name: string;
  readonly points: PointFigures[];
}

const fmt = (n: number, digits = 0) => n.toLocaleString('en', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (a: number, b: number) => `${a >= b ? '+' : '−'}${fmt(Math.abs((a / b - 1) * 100))} %`;
const verdict = (ok: boolean) => (ok ? 'met' : '**not met**');

/** Events per second of the rebuild (the whole history over the command's wall time). */
export const rebuildRate = (p: PointFigures) => (p.replay ? p.replay.eventsLines / p.replay.rebuildS : NaN);

const rows = (p: PointFigures, first: PointFigures, largest: boolean): Array<[string, string]> => {
  const out: Array<[string, string]> = [];
  const c = p.counts;
  out.push(['population', `${fmt(c.users ?? 0)} users, ${fmt(c.apps ?? 0)} apps, ${fmt(c.credentials ?? 0)} credentials, ${fmt(c.groups ?? 0)} groups, ${fmt(c.webhookApps ?? 0)} webhook apps, ${fmt(c.waitingMessages ?? 0)} messages waiting in ${fmt(c.waitingApps ?? 0)} apps`]);
  out.push(['history', `${fmt(p.head)} events, ${fmt(p.storeMb)} MB in the store (built in ${fmt(p.growth.populationS + p.growth.historyS + p.growth.liveS)} s)`]);
  out.push(['first start after growing → caught up', `${fmt(p.firstStartMs / 1000, 1)} s to health 200, ${fmt(p.catchUpMs / 1000, 1)} s more to publish and settle`]);
  const rssGoal = largest ? ` — goal ≤ 400 MB at 10,000 users: ${verdict(p.rssMb <= 400)}` : '';
  out.push(['RSS after a forced collection', `${fmt(p.rssMb)} MB (heaps ${p.heapMb.map((m) => fmt(m)).join(' + ')} MB; V8 and arenas ${fmt(p.maps.anonymousMb)}, C heap ${fmt(p.maps.cHeapMb)}, code ${fmt(p.maps.filesMb)}, shared ${fmt(p.maps.sharedMb)} MB)${rssGoal}`]);
  out.push(['RSS after the loads, collected', `${fmt(p.rssAfterLoadsMb)} MB`]);
  p.kinds.forEach((kinds, thread) => out.push([`heap by kind, ${thread === 0 ? 'API' : 'pipeline'} thread`, kinds.map((k) => `${k.kind} ${fmt(k.mb, 1)}`).join(', ') + ' MB']));
  const restartGoal = largest ? ` — goal ≤ 3 s with 10,000,000 events: ${verdict(p.restartMs <= 3000)}` : '';
  out.push(['restart after SIGKILL → health 200', `${fmt(p.restartMs)} ms${restartGoal}`]);
  for (const name of LOAD_NAMES) {
    const l = p.loads[name];
    const base = first.loads[name];
    const vsOne = p === first ? '(the one-user figure)' : `CPU ${pct(l.cpuUs, base.cpuUs)}, ratio ${pct(l.ratio, base.ratio)} against one user — goal within 10 %: ${verdict(l.cpuUs <= base.cpuUs * 1.1 && l.ratio >= base.ratio / 1.1)}`;
    out.push([
      LOAD_LABELS[name],
      `${fmt(l.rps)} req/s (${fmt(l.ratio, 2)}× the bare anchor at ${fmt(l.anchorRps)}), p99 ${fmt(l.p99Ms)} ms; CPU ${fmt(l.cpuUs)} µs/request beyond the idle background (${fmt(l.grossUs)} with it; API thread ${fmt(l.mainUs)}, pipeline ${fmt(l.pipelineUs)})${name === 'send50' ? ', its delivery included' : ''}; ${vsOne}`,
    ]);
  }
  const poll = p.loads.poll25.cpuUs / p.loads.poll1.cpuUs;
  out.push(['empty poll: 25 apps against 1', `CPU ${pct(p.loads.poll25.cpuUs, p.loads.poll1.cpuUs)}, throughput ${pct(p.loads.poll25.rps, p.loads.poll1.rps)} — goal independent of the key's apps (within 10 %): ${verdict(poll <= 1.1)}`]);
  const idleGoal = largest ? ` — goal ≤ 2 % of a core at 10,000 users: ${verdict(p.idle.pipeline <= 20)}` : '';
  out.push([
    'idle CPU',
    `pipeline thread ${fmt(p.idle.pipeline / 10, 2)} % of a core, API thread ${fmt(p.idle.main / 10, 2)} %, V8/libuv helpers ${fmt(p.idle.other / 10, 2)} %, all ${fmt(p.idle.total / 10, 2)} %${idleGoal}`,
  ]);
  if (p.replay) {
    const r = p.replay;
    out.push(['relay projections rebuild', `${fmt(r.rebuildS, 1)} s for ${fmt(r.eventsLines)} events: ${fmt(rebuildRate(p))} events/s (equal to the live models: ${r.rebuildEqual}) — goal ≥ 100,000 events/s: ${verdict(rebuildRate(p) >= 100_000)}`]);
    out.push(['relay events (the whole history)', `${fmt(r.eventsLines / r.eventsS)} events/s (${fmt(r.eventsS, 1)} s); ${r.anchor}: ${fmt(r.anchorRows / r.anchorS)} rows/s (${fmt(r.anchorS, 1)} s), ${fmt(r.eventsLines / r.eventsS / (r.anchorRows / r.anchorS), 2)}×`]);
  }
  return out;
};

export const markdownReport = (runs: readonly BackendRun[], header: string): string => {
  const sizes = [...new Set(runs.flatMap((r) => r.points.map((p) => p.users)))].sort((a, b) => a - b);
  const lines = [header, ''];
  for (const users of sizes) {
    lines.push(`### ${fmt(users)} ${users === 1 ? 'user' : 'users'}`, '', `| measure | ${runs.map((r) => r.name).join(' | ')} |`, `|---|${runs.map(() => '---|').join('')}`);
    const perRun = runs.map((r) => {
      const point = r.points.find((p) => p.users === users);
      return point ? new Map(rows(point, r.points[0]!, users === sizes[sizes.length - 1])) : new Map<string, string>();
    });
    const names = [...new Set(perRun.flatMap((m) => [...m.keys()]))];
    for (const name of names) lines.push(`| ${name} | ${perRun.map((m) => m.get(name) ?? '—').join(' | ')} |`);
    lines.push('');
  }
  return lines.join('\n');
};
