/**
 * Everything the scale bench measures at one point, on a store grown to it (grow.ts), in order:
 * Relay started (inspector on) and caught up; its idle CPU per thread; RSS and heaps after a forced
 * collection in every thread; the request loads (loads.ts); RSS again after them; heap snapshots by
 * kind; then SIGKILL and a start on the same data timed to health 200; then, Relay stopped, the
 * rebuild of the read models and the replays of the history (replay.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { collectAndMeasure } from '../inspector.ts';
import { memoryMaps, rssMb } from '../measures.ts';
import { largestKinds, type Kind } from './heap-kinds.ts';
import { measureLoads, type LoadFigures, type LoadName } from './loads.ts';
import type { ProbeKeys } from './population.ts';
import { measureReplay, type ReplayFigures } from './replay.ts';
import { drained, exited, idleCpu, quiet, startRelay, stopRelay, type ThreadCpu } from './relay-run.ts';

export interface PointFigures {
  readonly users: number;
  readonly counts: Record<string, number>;
  readonly head: number;
  /** The store's files (embedded) or the schema's relations (PostgreSQL), MB. */
  readonly storeMb: number;
  /** The first start after the growth: health 200, then caught up (publisher, read models, quiet CPU). */
  readonly firstStartMs: number;
  readonly catchUpMs: number;
  readonly idle: ThreadCpu;
  readonly rssMb: number;
  readonly heapMb: number[];
  readonly maps: ReturnType<typeof memoryMaps>;
  readonly rssAfterLoadsMb: number;
  readonly loads: Record<LoadName, LoadFigures>;
  readonly kinds: Kind[][];
  readonly restartMs: number;
  readonly replay: ReplayFigures | undefined;
  readonly growth: { populationS: number; historyS: number; liveS: number };
}

export interface PointOptions {
  readonly env: Record<string, string>;
  readonly port: number;
  readonly anchorBase: string;
  readonly probe: ProbeKeys;
  readonly loadSeconds: number;
  readonly rounds: number;
  readonly connections: number;
  readonly idleSeconds: number;
  readonly snapshots: boolean;
  readonly replay: boolean;
  /** Settled once the process uses less CPU than this (ms/s); undefined: once its CPU is steady. */
  readonly settleBelow: number | undefined;
  readonly settleDeadlineMs: number;
  readonly store: { kind: 'sqlite'; dataDir: string } | { kind: 'postgres'; url: string; schema: string };
  readonly log: (line: string) => void;
}

const directoryMb = (dir: string): number =>
  fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const full = path.join(dir, entry.name);
    return sum + (entry.isDirectory() ? directoryMb(full) : fs.statSync(full).size / 1e6);
  }, 0);

export const measurePoint = async (
  options: PointOptions,
  point: { users: number; counts: Record<string, number>; head: number; storeMb: () => Promise<number>; growth: PointFigures['growth'] },
): Promise<PointFigures> => {
  const { env, port, log } = options;
  const storeMb = await point.storeMb();
  let run = await startRelay(env, port, { inspect: true });
  try {
    const firstStartMs = run.startMs;
    const t0 = performance.now();
    await drained(run, { published: true });
    const settled = await quiet(run.pid, options.settleBelow, options.settleDeadlineMs);
    const catchUpMs = performance.now() - t0;
    log(`  started in ${(firstStartMs / 1000).toFixed(1)} s, caught up ${(catchUpMs / 1000).toFixed(1)} s later${settled < 0 ? ' (CPU still above the first point\'s idle: measured anyway)' : ''}`);
    const idle = await idleCpu(run.pid, options.idleSeconds);
    log(`  idle: ${(idle.total / 10).toFixed(2)} % of a core (pipeline thread ${(idle.pipeline / 10).toFixed(2)} %)`);
    const heap = await collectAndMeasure(run.inspectorPort!);
    const rss = rssMb(run.pid);
    const maps = memoryMaps(run.pid);
    log(`  RSS after a forced collection ${rss.toFixed(0)} MB, heaps ${heap.usedMb.map((m) => m.toFixed(0)).join(' + ')} MB`);
    const loads = await measureLoads(run, options.anchorBase, options.probe, { seconds: options.loadSeconds, rounds: options.rounds, connections: options.connections, idleMsPerSecond: idle.total });
    for (const [name, f] of Object.entries(loads)) log(`  ${name}: ${Math.round(f.rps)} req/s (${f.ratio.toFixed(2)}× anchor), ${f.cpuUs.toFixed(0)} µs CPU/request`);
    await collectAndMeasure(run.inspectorPort!);
    const rssAfterLoadsMb = rssMb(run.pid);
    const kinds = options.snapshots ? await largestKinds(run.inspectorPort!) : [];
    // Restart after SIGKILL: the same data, timed from spawn to health 200 (no inspector).
    run.child.kill('SIGKILL');
    await exited(run.child);
    run = await startRelay(env, port, { inspect: false });
    const restartMs = run.startMs;
    log(`  restart after SIGKILL → health 200: ${restartMs.toFixed(0)} ms`);
    await stopRelay(run);
    const replay = options.replay ? await measureReplay(env, options.store) : undefined;
    if (replay) log(`  rebuild ${replay.rebuildS.toFixed(1)} s (equal: ${replay.rebuildEqual}); relay events ${replay.eventsLines} lines in ${replay.eventsS.toFixed(1)} s; anchor ${replay.anchorRows} rows in ${replay.anchorS.toFixed(1)} s`);
    return {
      users: point.users,
      counts: point.counts,
      head: point.head,
      storeMb,
      firstStartMs,
      catchUpMs,
      idle,
      rssMb: rss,
      heapMb: heap.usedMb,
      maps,
      rssAfterLoadsMb,
      loads,
      kinds,
      restartMs,
      replay,
      growth: point.growth,
    };
  } finally {
    await stopRelay(run);
  }
};

export { directoryMb };
