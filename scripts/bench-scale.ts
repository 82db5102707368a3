/**
 * `npm run bench:scale` (issue 49): Relay with ten thousand tenants. Builds a population in bulk,
 * every event as Relay writes it (scripts/bench/scale/: plan, population, history, live-phase),
 * and measures at each point (1, 100, 1,000, 10,000 users by default, in one run, each point the
 * previous one grown): RSS after a forced collection and where it goes, restart after SIGKILL,
 * per-request CPU and throughput of verify, empty polls (a key of 1 and of 25 apps) and a send of
 * 50 against the one-user figures, idle CPU per thread, the rebuild of the read models and the
 * replay of the history beside the store's own bulk read. On the embedded default, then on Kafka +
 * PostgreSQL (a Kafka node of its own, scripts/kafka-local.sh; PostgreSQL at DATABASE_URL or
 * postgres://postgres@127.0.0.1:5432/test, in a schema of its own, dropped at the end).
 *
 * Options: --points 1,100,1000,10000; the sizes at the largest point --users, --apps,
 * --credentials, --groups, --webhook-apps, --waiting, --waiting-apps, --events; --fraction F (every
 * size and point times F: 0.1 is the issue's population at a tenth); --backends embedded,kafka;
 * --history-days 365; --settle 300 (s: at most this long for a started Relay to
 * settle to the first point's idle CPU before it is measured); --seconds 3 --rounds 3 --connections 50 (each load: rounds × (anchor, Relay)
 * slices); --idle 20 (s); --keep (the store stays, the probe's keys beside it); --no-snapshots; --no-replay; --concurrency 64 (512 on PostgreSQL: appends in flight while
 * building); --png docs/scale-bench.png; --replot a.json[,b.json] (only the table and the picture, from
 * the results of one run or of several joined).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../apps/services/config.ts';
import { freePort, ROOT } from '../test/support/relay-process.ts';
import { grow, vacuumAnalyze, type GrowthFigures } from './bench/scale/grow.ts';
import { pipelineCheckpoints } from './bench/scale/live-phase.ts';
import { benchRelayEnv, children, tracked } from './bench/scale/relay-run.ts';
import { directoryMb, measurePoint, type PointFigures } from './bench/scale/measure-point.ts';
import { DEFAULT_POINTS, DEFAULT_SIZES, ScalePlan, type ScaleSizes } from './bench/scale/plan.ts';
import { renderPng, svgOf } from './bench/scale/plot.ts';
import type { Registry } from './bench/scale/population.ts';
import { markdownReport, type BackendRun } from './bench/scale/report.ts';
import { HistoryClock } from './bench/scale/writer.ts';

process.env.RELAY_FROM_BUILD = '1';
const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : undefined);
const num = (name: string, fallback: number) => (arg(name) === undefined ? fallback : Number(arg(name)));
const log = (line: string) => console.log(line);

const fraction = num('fraction', 1);
const scaled = (n: number) => Math.max(1, Math.round(n * fraction));
const sizes: ScaleSizes = {
  users: num('users', scaled(DEFAULT_SIZES.users)),
  apps: num('apps', Math.max(25, Math.round((DEFAULT_SIZES.apps - 25) * fraction) + 25)),
  credentials: num('credentials', scaled(DEFAULT_SIZES.credentials)),
  groups: num('groups', scaled(DEFAULT_SIZES.groups)),
  webhookApps: num('webhook-apps', scaled(DEFAULT_SIZES.webhookApps)),
  waitingMessages: num('waiting', scaled(DEFAULT_SIZES.waitingMessages)),
  waitingApps: num('waiting-apps', scaled(DEFAULT_SIZES.waitingApps)),
  events: num('events', scaled(DEFAULT_SIZES.events)),
};
const points = [...new Set(arg('points')?.split(',').map(Number) ?? DEFAULT_POINTS.map((p) => (p === 1 ? 1 : scaled(p))))].filter((p) => p >= 1 && p <= sizes.users).sort((a, b) => a - b);
const backends = (arg('backends') ?? 'embedded,kafka').split(',') as Array<'embedded' | 'kafka'>;
const pngFile = path.resolve(ROOT, arg('png') ?? 'docs/scale-bench.png');
const databaseUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const caption = (runs: readonly BackendRun[]) => `Relay with many tenants (npm run bench:scale; ${runs.map((r) => r.name).join(' and ')}; ${new Date().toISOString().slice(0, 10)})`;

const startAnchor = async (): Promise<{ child: ChildProcess; base: string }> => {
  const port = await freePort();
  const child = tracked(spawn(process.execPath, ['scripts/bench/bare-fastify.mjs'], { cwd: ROOT, env: { ...process.env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] }));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 600; i++) {
    if ((await fetch(`${base}/health`).catch(() => undefined))?.status === 200) return { child, base };
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('the bare Fastify anchor did not start');
};

/** A Kafka node of the bench's own (its thousands of inbound topics stay out of a shared broker), or KAFKA_BROKERS when set. */
const startKafka = async () => {
  if (process.env.KAFKA_BROKERS) return { brokers: process.env.KAFKA_BROKERS, stop: () => undefined };
  const env = { ...process.env, KAFKA_PORT: String(await freePort()), KAFKA_CONTROLLER_PORT: String(await freePort()), KAFKA_DATA_DIR: fs.mkdtempSync(path.join(os.tmpdir(), 'relay-scale-kafka-')) };
  const script = path.join(ROOT, 'scripts/kafka-local.sh');
  const stop = () => {
    cleanups.delete(stop);
    execFileSync(script, ['stop'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    fs.rmSync(env.KAFKA_DATA_DIR, { recursive: true, force: true });
  };
  cleanups.add(stop);
  execFileSync(script, ['start'], { env, stdio: ['ignore', 'ignore', 'inherit'] });
  return { brokers: `127.0.0.1:${env.KAFKA_PORT}`, stop };
};

const withPg = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
};

/**
 * `--kept DATA_DIR,SCHEMA,TOPIC_PREFIX` (what `--keep` logged, Kafka + PostgreSQL): no growth, the
 * largest point measured on that store as it is (after the pipeline's checkpoints are moved to its
 * head, as the live phase does, and its tables vacuumed); for a run whose last growth did not end.
 * `--kept-live-from USERS`: the point up to which the live phase (groups, waiting messages) was written.
 */
const kept = arg('kept')?.split(',');

const runBackend = async (backend: 'embedded' | 'kafka', anchorBase: string, plan: ScalePlan, resultsFile: string, done: BackendRun[]): Promise<BackendRun> => {
  const dataDir = kept?.[0] ?? fs.mkdtempSync(path.join(os.tmpdir(), 'relay-scale-'));
  const schema = kept?.[1] ?? `relay_scale_${process.pid}`;
  const kafka = backend === 'kafka' ? await startKafka() : undefined;
  const env: Record<string, string> = {
    ...benchRelayEnv(dataDir),
    ...(kafka ? { EVENT_STORE: 'postgres', DATABASE_URL: databaseUrl, DATABASE_SCHEMA: schema, BROKER: 'kafka', KAFKA_BROKERS: kafka.brokers, KAFKA_TOPIC_PREFIX: kept?.[2] ?? `scale${process.pid}.` } : {}),
  };
  const config = loadConfig(env);
  const run: BackendRun = { name: kafka ? 'Kafka + PostgreSQL' : 'embedded (SQLite)', points: [] };
  const registry: Registry = { apps: new Map() };
  const clock = HistoryClock.ending(Date.now() - 10 * 60_000, num('history-days', 365));
  const storeMb = () =>
    kafka
      ? withPg(async (c) => Number((await c.query(`SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`, [schema])).rows[0].bytes) / 1e6)
      : Promise.resolve(directoryMb(dataDir));
  log(`\n== ${run.name}: data in ${dataDir}${kafka ? `, schema ${schema}, Kafka at ${kafka.brokers}` : ''}`);
  try {
    let from = 0;
    let extraEvents = 0;
    let lastHead = 0n;
    for (const users of kept ? points.slice(-1) : points) {
      let growth: GrowthFigures;
      let counts = plan.countsAt(users);
      if (kept) {
        if (!kafka) throw new Error('--kept measures a kept Kafka + PostgreSQL store');
        registry.probe = JSON.parse(fs.readFileSync(path.join(dataDir, 'probe-keys.json'), 'utf8')) as Registry['probe'];
        const head = await withPg(async (c) => BigInt((await c.query(`SELECT coalesce(max(global_position), 0) AS head FROM "${schema}".events`)).rows[0].head as string));
        await withPg((c) => c.query(`INSERT INTO "${schema}".checkpoints (name, position) SELECT unnest($1::text[]), $2 ON CONFLICT (name) DO UPDATE SET position = excluded.position`, [pipelineCheckpoints(config), String(head)]));
        await vacuumAnalyze(databaseUrl, schema);
        const live = plan.countsAt(num('kept-live-from', users));
        counts = { ...counts, groups: live.groups, waitingApps: live.waitingApps, waitingMessages: live.waitingMessages, events: Number(head) };
        log(`-- ${users} users: the kept store at head ${head} (live phase up to ${num('kept-live-from', users)} users), checkpoints moved to it, vacuumed`);
        growth = { users, populationS: 0, historyS: 0, liveS: 0, head, extraEvents: 0, historyUnits: 0 };
      } else {
        log(`-- ${users} users: growing from ${from}`);
        growth = await grow({ config, plan, registry, clock, from, to: users, concurrency: num('concurrency', kafka ? 512 : 64), extraEvents, lastHead, log });
      }
      extraEvents = growth.extraEvents;
      lastHead = growth.head;
      from = users;
      // A kept store can be measured again (--kept, scripts/bench/profile-threads.ts), also when this
      // point's measurement fails: the probe's keys beside it before it is measured.
      if (argv.includes('--keep') && !kept) fs.writeFileSync(path.join(dataDir, 'probe-keys.json'), JSON.stringify(registry.probe), { mode: 0o600 });
      const figures: PointFigures = await measurePoint(
        {
          env,
          port: await freePort(),
          anchorBase,
          probe: registry.probe!,
          loadSeconds: num('seconds', 3),
          rounds: num('rounds', 3),
          connections: num('connections', 50),
          idleSeconds: num('idle', 20),
          snapshots: !argv.includes('--no-snapshots'),
          replay: !argv.includes('--no-replay'),
          // After the first point: settled once below its idle CPU (with a margin), within --settle seconds.
          settleBelow: run.points[0] ? Math.max(60, run.points[0].idle.total * 1.3 + 10) : undefined,
          settleDeadlineMs: num('settle', 300) * 1000,
          store: kafka ? { kind: 'postgres', url: databaseUrl, schema } : { kind: 'sqlite', dataDir },
          log,
        },
        { users, counts, head: Number(growth.head), storeMb, growth: { populationS: growth.populationS, historyS: growth.historyS, liveS: growth.liveS } },
      );
      run.points.push(figures);
      fs.writeFileSync(resultsFile, JSON.stringify({ sizes, points, runs: [...done, run] }, null, 1));
    }
    return run;
  } finally {
    if (kafka) {
      // A kept store on Kafka + PostgreSQL is its schema and topics too: Relay runs on it again with the settings logged.
      if (argv.includes('--keep') || kept) log(`kept: DATA_DIR=${dataDir} EVENT_STORE=postgres DATABASE_URL=${databaseUrl} DATABASE_SCHEMA=${schema} BROKER=kafka KAFKA_TOPIC_PREFIX=${JSON.stringify(env.KAFKA_TOPIC_PREFIX ?? '')}`);
      else await withPg((c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)).catch((error: unknown) => log(`schema ${schema} not dropped: ${String(error)}`));
      kafka.stop();
    }
    if (!argv.includes('--keep') && !kept) fs.rmSync(dataDir, { recursive: true, force: true });
  }
};

const report = async (runs: BackendRun[], resultsFile: string) => {
  const header = `Scale bench, ${new Date().toISOString()}: node ${process.version}, ${os.cpus().length} cores; sizes at the largest point ${JSON.stringify(sizes)}; results ${resultsFile}`;
  const markdown = markdownReport(runs, header);
  fs.writeFileSync(resultsFile.replace(/\.json$/, '.md'), markdown);
  console.log(`\n${markdown}`);
  const written = await renderPng(svgOf(runs, caption(runs)), pngFile);
  console.log(`plot: ${written}`);
};

/** What an interrupted run must still undo (its Kafka node). */
const cleanups = new Set<() => void>();
// Interrupted: end Relay, the anchor and Kafka too (a finally does not run on a signal).
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => {
    for (const child of children) child.kill('SIGKILL');
    for (const cleanup of cleanups) cleanup();
    process.exit(130);
  });

const main = async () => {
  const replot = arg('replot');
  if (replot) {
    // One results file, or several (runs made apart, e.g. one per backend) joined.
    const files = replot.split(',');
    const runs = files.flatMap((file) => (JSON.parse(fs.readFileSync(file, 'utf8')) as { runs: BackendRun[] }).runs);
    return report(runs, files[0]!);
  }
  const plan = new ScalePlan(sizes);
  const resultsFile = path.join(os.tmpdir(), `relay-scale-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  log(`scale bench: points ${points.join(', ')} users; at the largest ${JSON.stringify(plan.countsAt(points[points.length - 1]!))}; results in ${resultsFile}`);
  const anchor = await startAnchor();
  const runs: BackendRun[] = [];
  try {
    for (const backend of backends) runs.push(await runBackend(backend, anchor.base, plan, resultsFile, runs));
  } finally {
    anchor.child.kill('SIGTERM');
  }
  await report(runs, resultsFile);
};

await main();
