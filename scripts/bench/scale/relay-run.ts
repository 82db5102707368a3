/**
 * Relay as the scale bench runs it: `relay start` (role all, the JavaScript build) as a process of
 * its own, with the V8 inspector on loopback when the bench is to force collections and take heap
 * snapshots (scripts/bench/inspector.ts); its threads' CPU from /proc/<pid>/task/*\/stat, the
 * pipeline's thread told apart by its nice value (PIPELINE_THREAD_NICE, 19 by default).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { freePort, ROOT } from '../../../test/support/relay-process.ts';

export interface RelayRun {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly base: string;
  readonly inspectorPort: number | undefined;
  /** Spawn → health 200. */
  readonly startMs: number;
}

/** Every process the bench started and that still runs: ended if the bench is interrupted. */
export const children = new Set<ChildProcess>();

/** Tracks a child until it exits. */
export const tracked = (child: ChildProcess): ChildProcess => {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });

/** Relay's settings in the scale bench (and in send-ab.ts): the store in `dataDir`, the build, no request limits in the way. */
export const benchRelayEnv = (dataDir: string): Record<string, string> => ({
  DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  LOG_LEVEL: 'warn',
  RELAY_FROM_BUILD: '1',
  RATE_LIMIT_POLL_PER_MIN: '1000000000',
  RATE_LIMIT_SEND_FREE_PER_MIN: '1000000000',
  RATE_LIMIT_VERIFY_PER_MIN: '1000000000',
});

/** Starts `relay start` on `port` and waits for health 200 (at most `deadlineMs`). */
export const startRelay = async (env: Record<string, string>, port: number, options: { inspect: boolean; deadlineMs?: number }): Promise<RelayRun> => {
  const inspectorPort = options.inspect ? await freePort() : undefined;
  const began = performance.now();
  const args = [...(inspectorPort ? [`--inspect=127.0.0.1:${inspectorPort}`] : []), 'bin/relay.js', 'start'];
  const child = tracked(spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] }));
  const base = `http://127.0.0.1:${port}`;
  const deadline = options.deadlineMs ?? 30 * 60_000;
  for (;;) {
    const status = await fetch(`${base}/api/v1/health`).then(
      async (res) => (await res.arrayBuffer(), res.status),
      () => 0,
    );
    if (status === 200) return { child, pid: child.pid!, base, inspectorPort, startMs: performance.now() - began };
    if (child.exitCode !== null) throw new Error(`relay start exited with ${child.exitCode}`);
    if (performance.now() - began > deadline) {
      child.kill('SIGKILL');
      throw new Error(`relay start did not answer health 200 within ${deadline} ms`);
    }
    await sleep(5);
  }
};

/** SIGTERM, and the exit (SIGKILL after 60 s). */
export const stopRelay = async (run: RelayRun): Promise<void> => {
  if (run.child.exitCode !== null || run.child.signalCode !== null) return;
  const timer = setTimeout(() => run.child.kill('SIGKILL'), 60_000);
  run.child.kill('SIGTERM');
  await exited(run.child);
  clearTimeout(timer);
};

/** The sum of a Prometheus series' samples in `/metrics` (all labels). */
export const metricSum = (text: string, name: string): number =>
  text
    .split('\n')
    .filter((line) => line.startsWith(`${name}{`) || line.startsWith(`${name} `))
    .reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);

export const metrics = async (run: RelayRun): Promise<string> => (await fetch(`${run.base}/metrics`)).text();

/**
 * Waits until every accepted message is delivered (or abandoned) and the delivery topics are
 * consumed, and with `published`, until the queue publisher has nothing left to publish. (Its lag
 * counts every event of its categories after its checkpoint, the deliveries it never reads among
 * them: it stays above 0 after a send until the next event it publishes, so it is looked at only
 * when the last events are ones it publishes, as after a growth.)
 */
export const drained = async (run: RelayRun, options: { published?: boolean; deadlineMs?: number } = {}): Promise<number> => {
  const began = performance.now();
  const deadlineMs = options.deadlineMs ?? 30 * 60_000;
  for (;;) {
    const text = await metrics(run);
    const lag = options.published ? metricSum(text, 'relay_publisher_checkpoint_lag') : 0;
    const queued = metricSum(text, 'relay_consumer_lag');
    const backlog = metricSum(text, 'relay_messages_accepted_total') - metricSum(text, 'relay_messages_delivered_total') - metricSum(text, 'relay_messages_abandoned_total');
    if (lag === 0 && queued === 0 && backlog <= 0) return performance.now() - began;
    if (performance.now() - began > deadlineMs) throw new Error(`not drained after ${deadlineMs} ms: publisher lag ${lag}, ${queued} records queued, ${backlog} messages to deliver`);
    await sleep(250);
  }
};

/** USER_HZ (1/100 s on Linux). */
const TICK_MS = 10;

export interface ThreadCpu {
  /** CPU ms of all threads. */
  readonly total: number;
  /** The main (API) thread's. */
  readonly main: number;
  /** The delivery pipeline's thread (the one at PIPELINE_THREAD_NICE). */
  readonly pipeline: number;
  /** Everything else: V8's helpers, libuv's pool, the inspector. */
  readonly other: number;
}

/** CPU used so far by each kind of thread, in ms. */
export const threadCpu = (pid: number, pipelineNice = 19): ThreadCpu => {
  let main = 0;
  let pipeline = 0;
  let other = 0;
  for (const task of fs.readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${pid}/task/${task}/stat`, 'utf8');
    } catch {
      continue; // ended meanwhile
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ms = (Number(fields[11]) + Number(fields[12])) * TICK_MS;
    if (Number(task) === pid) main += ms;
    else if (Number(fields[16]) === pipelineNice && pipelineNice !== 0) pipeline += ms;
    else other += ms;
  }
  return { total: main + pipeline + other, main, pipeline, other };
};

export const cpuSince = (before: ThreadCpu, after: ThreadCpu): ThreadCpu => ({
  total: after.total - before.total,
  main: after.main - before.main,
  pipeline: after.pipeline - before.pipeline,
  other: after.other - before.other,
});

/** Per-thread CPU over `seconds` of whatever the process does, in ms per second (10 = 1 % of a core). */
export const idleCpu = async (pid: number, seconds: number): Promise<ThreadCpu> => {
  const before = threadCpu(pid);
  const began = performance.now();
  await sleep(seconds * 1000);
  const used = cpuSince(before, threadCpu(pid));
  const perSecond = 1000 / (performance.now() - began);
  return { total: used.total * perSecond, main: used.main * perSecond, pipeline: used.pipeline * perSecond, other: used.other * perSecond };
};

/**
 * Waits until the process has settled after a start (publishing, catching up, checkpointing the
 * WAL): its CPU below `msPerSecond` in three 2-second windows in a row (a catch-up's tail has lulls),
 * or, without a threshold (the first point, before any idle cost is known), below 60 ms/s, or
 * three windows within 20 % of each other. Returns how long that took, or -1 when `deadlineMs`
 * passed first.
 */
export const quiet = async (pid: number, msPerSecond: number | undefined, deadlineMs: number): Promise<number> => {
  const began = performance.now();
  const windows: number[] = [];
  for (;;) {
    windows.push((await idleCpu(pid, 2)).total);
    const last = windows.slice(-3);
    if (last.length === 3) {
      if (last.every((w) => w <= (msPerSecond ?? 60))) return performance.now() - began;
      if (msPerSecond === undefined && Math.max(...last) - Math.min(...last) <= Math.max(15, 0.2 * Math.max(...last))) return performance.now() - began;
    }
    if (performance.now() - began > deadlineMs) return -1;
  }
};
