import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { Kafka, logLevel } from 'kafkajs';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey } from './account-fixture.ts';
import type { HistoryChecker } from './history-checker.ts';
import { runCli, startRelayProcess, type RelayProcess } from './relay-process.ts';
import { waitFor } from './wait-for.ts';

/**
 * The fault suite's cluster and traffic (test/faults/, issue 48): Relay instances sharing one store
 * and broker, and loops that put messages in both ways (inbound injected through the simulator,
 * outbound sent through the public API), take them out (polls), and tell the history checker
 * everything they saw. Every loop is bounded by its caller's `stop()` and by its own deadline.
 */

export const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface Cluster {
  readonly instances: RelayProcess[];
  readonly appId: string;
  readonly key: string;
  /** The environment every instance shares (store, broker, key, prefix), without per-instance overrides: for the CLI. */
  readonly shared: Record<string, string>;
  /** Stops every instance (continuing a frozen one first) and removes their data. */
  close(): Promise<void>;
}

export interface ClusterOptions {
  readonly count: number;
  /** The shared environment (EVENT_STORE, BROKER, ...). A RELAY_SECRET_KEY, a schema and a topic prefix of its own are added. */
  readonly env: Record<string, string>;
  /** What instance `i` sees differently (its broker or store address, through a proxy that can be cut). */
  readonly perInstance?: (i: number) => Record<string, string>;
  readonly messengers?: string[];
  /** Instance `i`'s DATA_DIR (default: a new temporary directory). */
  readonly dataDirOf?: (i: number) => string;
}

/** Starts `count` instances of role `all`, an operator, an app on the simulator, and an API key every instance knows. */
export const startCluster = async (options: ClusterOptions): Promise<Cluster> => {
  const tag = randomBytes(4).toString('hex');
  const shared: Record<string, string> = {
    RELAY_SECRET_KEY: randomBytes(32).toString('hex'),
    RATE_LIMIT_POLL_PER_MIN: '1000000',
    RATE_LIMIT_SEND_FREE_PER_MIN: '1000000',
    LOG_LEVEL: 'info',
    ...(options.env.EVENT_STORE === 'postgres' ? { DATABASE_SCHEMA: `relay_fault_${tag}` } : {}),
    ...(options.env.BROKER === 'kafka' ? { KAFKA_TOPIC_PREFIX: `fault-${tag}.` } : {}),
    ...options.env,
  };
  const instances: RelayProcess[] = [];
  const close = async () => {
    for (const relay of instances) {
      relay.child.kill('SIGCONT');
      await relay.stop();
    }
    // Each instance's log, for a look after the run: FAULT_LOG_DIR/<tag>-i<n>.log.
    const logDir = process.env.FAULT_LOG_DIR;
    if (logDir) {
      fs.mkdirSync(logDir, { recursive: true });
      instances.forEach((relay, i) => fs.writeFileSync(path.join(logDir, `${tag}-i${i}.log`), relay.output()));
    }
    for (const relay of instances) await relay.cleanup().catch(() => undefined);
  };
  try {
    for (let i = 0; i < options.count; i++) {
      const dataDir = options.dataDirOf?.(i);
      instances.push(await startRelayProcess({ env: { ...shared, ...options.perInstance?.(i) }, ...(dataDir !== undefined ? { dataDir } : {}) }));
    }
    const first = instances[0]!;
    const account = await createAccount(first);
    const app = await createApp(first, account, options.messengers ?? ['signal']);
    const { secret: key } = await createKey(first, account, [app.appId]);
    for (const relay of instances.slice(1))
      await waitFor(async () => (await api(relay, 'GET', '/auth/verify', { key })).status === 200, 30_000, `the key on ${relay.url}`);
    return { instances, appId: app.appId, key, shared, close };
  } catch (error) {
    await close();
    throw error;
  }
};

/** A name for an instance in reports. */
export const nameOf = (cluster: Pick<Cluster, 'instances'>, relay: RelayProcess) => `i${cluster.instances.indexOf(relay)}`;

export interface TrafficOptions {
  /** Inbound: a `relay simulate inbound --count` of this many every `inboundEveryMs` (0: none). */
  readonly inboundPerChunk?: number;
  readonly inboundEveryMs?: number;
  /** The environment the injecting CLI runs with (default: the cluster's shared one, direct to store and broker). */
  readonly cliEnv?: Record<string, string>;
  /** Outbound: a send of this many messages every `sendEveryMs`, through each instance in turn (0: none). */
  readonly sendBatch?: number;
  readonly sendEveryMs?: number;
  /** Which instances are sent through and polled (default all). */
  readonly through?: readonly RelayProcess[];
  /** A request to an instance that has not answered by then is given up (its outcome unknown). Default 120 s. */
  readonly requestTimeoutMs?: number;
  readonly contactId?: string;
  /**
   * A send refused after this long is one whose store did not answer in time: its batch may have
   * been committed all the same (the store's query timeout), so it counts as of unknown outcome
   * (`sentMaybe`), not as refused. Default: never.
   */
  readonly ambiguousAfterMs?: number;
}

export interface StatusCounts {
  [status: string]: number;
}

/**
 * Traffic both ways through a cluster, told to `checker`: texts `in-<chunk> #<i>` injected,
 * `out-<n>` sent. Polls run in one loop per instance, sends too, so that an instance that hangs
 * (frozen, cut off) holds up only its own loop. `stop()` ends the producing loops; polling goes on
 * until `drain`.
 */
export const startTraffic = (cluster: Cluster, checker: HistoryChecker, options: TrafficOptions = {}) => {
  const through = options.through ?? cluster.instances;
  const timeoutMs = options.requestTimeoutMs ?? 120_000;
  const contactId = options.contactId ?? '+15550300';
  let producing = true;
  let polling = true;
  let chunk = 0;
  let sent = 0;
  /** Answers by instance and kind: `i0 send 202`, `i1 poll 503`, ... */
  const statuses: StatusCounts = {};
  /** The first body of each kind of answer that is not a success (`send 503`: its body). */
  const bodies: Record<string, unknown> = {};
  /** Why injections failed (the CLI's last lines), for the report. */
  const injectFailures: string[] = [];
  const count = (what: string) => (statuses[what] = (statuses[what] ?? 0) + 1);
  /** When each instance last answered each kind with each status (for recovery times). */
  const answers: Array<{ at: number; via: string; kind: 'send' | 'poll' | 'inject'; status: number }> = [];
  const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

  const request = async (relay: RelayProcess, method: string, route: string, body?: unknown) => {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const res = await fetch(`${relay.url}/api/v1${route}`, {
        method,
        signal: controller.signal,
        headers: { authorization: `Bearer ${cluster.key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as any) : undefined };
    } finally {
      clearTimeout(timer);
    }
  };

  const injecting = (async () => {
    const every = options.inboundEveryMs ?? 0;
    const per = options.inboundPerChunk ?? 0;
    if (every <= 0 || per <= 0) return;
    while (producing) {
      const started = Date.now();
      const prefix = `in-${++chunk}`;
      const texts = Array.from({ length: per }, (_, i) => `${prefix} #${i + 1}`);
      const result = await runCli(
        ['simulate', 'inbound', '--app', cluster.appId, '--messenger', 'signal', '--contact', '+15550400', '--text', prefix, '--count', String(per)],
        { ...cluster.instances[0]!.env, ...cluster.shared, ...options.cliEnv },
      );
      answers.push({ at: Date.now(), via: 'cli', kind: 'inject', status: result.code === 0 ? 200 : 503 });
      if (result.code !== 0) injectFailures.push(result.stderr.split('\n').filter(Boolean).slice(-3).join(' / '));
      count(`cli inject ${result.code === 0 ? 'ok' : 'failed'}`);
      for (const text of texts) result.code === 0 ? checker.injected(text) : checker.injectedMaybe(text);
      await pause(Math.max(0, every - (Date.now() - started)));
    }
  })();

  const sending = through.map(async (relay, index) => {
    const every = options.sendEveryMs ?? 0;
    const batch = options.sendBatch ?? 0;
    if (every <= 0 || batch <= 0) return;
    await pause((every / through.length) * index); // the instances in turn
    while (producing) {
      const started = Date.now();
      const texts = Array.from({ length: batch }, () => `out-${++sent}`);
      const messages = texts.map((text) => ({ appId: cluster.appId, messenger: 'signal', contactId, message: text }));
      const via = nameOf(cluster, relay);
      try {
        const res = await request(relay, 'POST', '/messages/send', { messages });
        if (res.status !== 202 && Date.now() - started >= (options.ambiguousAfterMs ?? Infinity)) {
          count(`${via} send ${res.status} after a timeout`);
          answers.push({ at: Date.now(), via, kind: 'send', status: res.status });
          for (const text of texts) checker.sentMaybe(text);
          await pause(Math.max(0, every - (Date.now() - started)));
          continue;
        }
        count(`${via} send ${res.status}`);
        if (res.status !== 202) bodies[`send ${res.status}`] ??= res.body;
        answers.push({ at: Date.now(), via, kind: 'send', status: res.status });
        if (res.status === 202) {
          const ids = (res.body.successfulMessages as Array<{ messageId: string }>).map((m) => m.messageId);
          if (ids.length !== texts.length) throw new Error(`a send of ${texts.length} accepted ${ids.length}: ${JSON.stringify(res.body)}`);
          texts.forEach((text, i) => checker.accepted(text, ids[i]!));
        } else for (const text of texts) checker.refused(text, res.status);
      } catch (error) {
        if (error instanceof Error && error.message.startsWith('a send of')) throw error;
        count(`${via} send no answer`);
        for (const text of texts) checker.sentMaybe(text);
      }
      await pause(Math.max(0, every - (Date.now() - started)));
    }
  });

  const polls = through.map(async (relay) => {
    const via = nameOf(cluster, relay);
    while (polling) {
      let got = 0;
      try {
        const res = await request(relay, 'GET', '/messages/poll?limit=20');
        count(`${via} poll ${res.status}`);
        if (res.status !== 200) bodies[`poll ${res.status}`] ??= res.body;
        answers.push({ at: Date.now(), via, kind: 'poll', status: res.status });
        if (res.status === 200) for (const m of res.body.messages as Array<{ content: string }>) (checker.popped(m.content, via), got++);
      } catch {
        count(`${via} poll no answer`);
      }
      if (got === 0) await pause(100);
    }
  });

  return {
    statuses,
    answers,
    injectFailures,
    bodies,
    /** Ends the producing loops (inject, send) and waits for them. */
    async stop(): Promise<void> {
      producing = false;
      await Promise.all([injecting, ...sending]);
    },
    /** Polls until every message injected for sure was popped (or the deadline), then ends the polls. */
    async drain(timeoutMs: number): Promise<void> {
      try {
        await waitFor(() => checker.notYetPopped().length === 0, timeoutMs, `every injected message popped (${checker.notYetPopped().length} not yet: ${checker.notYetPopped().slice(0, 5).join(', ')})`, 200);
      } finally {
        polling = false;
        await Promise.all(polls);
      }
    },
  };
};

/** Tells the checker every hand-off the simulators of the instances saw (read anew each time). */
export const readOutboxes = (cluster: Pick<Cluster, 'instances'>, checker: HistoryChecker): void => {
  checker.clearHandings();
  for (const relay of cluster.instances) {
    const store = new SimulatorStore(relay.dataDir);
    try {
      for (const d of store.deliveries()) checker.handed(d.text, { ok: d.ok, via: nameOf(cluster, relay), at: d.at, messageId: d.messageId });
    } finally {
      store.close();
    }
  }
};

/** Waits until every accepted message reached the messenger (reading the outboxes every 500 ms). */
export const untilDelivered = async (cluster: Pick<Cluster, 'instances'>, checker: HistoryChecker, timeoutMs: number): Promise<void> => {
  await waitFor(
    () => {
      readOutboxes(cluster, checker);
      return checker.notYetDelivered().length === 0;
    },
    timeoutMs,
    `every accepted message delivered (${checker.notYetDelivered().length} not yet: ${checker.notYetDelivered().slice(0, 5).join(', ')})`,
    500,
  );
};

/**
 * Messages of the delivery group not yet committed on the outbound topics (first attempts, retries,
 * deferred): 0 once every record was handled and its offset committed, after which no instance
 * has a record of them in hand.
 */
export const deliveryLag = async (brokers: string, prefix: string): Promise<number> => {
  const kafka = new Kafka({ clientId: 'fault-suite', brokers: [brokers], logLevel: logLevel.NOTHING, retry: { retries: 2 } });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const topics = (await admin.listTopics()).filter((t) => t.startsWith(`${prefix}outbound.`) && t !== `${prefix}outbound.dead`);
    let lag = 0;
    const committed = await admin.fetchOffsets({ groupId: `${prefix}delivery`, topics });
    for (const topic of topics) {
      const ends = await admin.fetchTopicOffsets(topic);
      const mine = committed.find((c) => c.topic === topic)?.partitions ?? [];
      for (const end of ends) {
        const at = mine.find((p) => p.partition === end.partition)?.offset ?? '-1';
        const from = Number(at) < 0 ? Number(end.low) : Number(at);
        lag += Math.max(0, Number(end.high) - from);
      }
    }
    return lag;
  } finally {
    await admin.disconnect();
  }
};

/** Log lines of an instance at warning level or above, the last `n` (for a failure's message). */
export const warningsOf = (relay: RelayProcess, n = 30): string =>
  relay
    .output()
    .split('\n')
    .filter((line) => /"level":(40|50|60)/.test(line))
    .slice(-n)
    .join('\n');

/** Summary of a fault's run for the report: printed by each test. */
export const report = (label: string, checker: HistoryChecker, extra: Record<string, unknown> = {}) => {
  const verdict = checker.verdict();
  console.info(`[fault] ${label}: ${JSON.stringify({ counts: verdict.counts, ...extra })}`);
  return verdict;
};
