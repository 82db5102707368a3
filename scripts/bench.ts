/**
 * `npm run bench`: throughput and latency of Relay on its embedded default, next to a bare
 * Fastify server measured in the same run, printed as figures and ratios (the machines are
 * shared and noisy, so ratios are what compares across runs; each ratio pairs alternating slices of
 * the anchor and Relay). Options: --duration <s> (5), --rounds <n> (4),
 * --broker kafka (Relay on Kafka: KAFKA_BROKERS, or the project's local Kafka started here; Kafka's
 * own ProducerPerformance for the same record size is measured in the same run as the anchor).
 */
import autocannon from 'autocannon';
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { SimulatorStore } from '../infra/messenger/simulator/simulator-store.ts';
import { freePort, ROOT, runCli } from '../test/support/relay-process.ts';
import { waitFor } from '../test/support/wait-for.ts';
import { measureFailover } from './bench/failover.ts';
import { cpuMsPerSecond, memoryMaps, percentile, rssMb } from './bench/measures.ts';
import { measureNestedJson } from './bench/nested-json.ts';
import { measureHostileMix } from './bench/hostile-mix.ts';
import { measureStatistics, statisticsRows } from './bench/statistics.ts';
import { measureSessionNetwork, sessionRows } from './bench/session-network.ts';
import { measureSignalPace } from './bench/signal-pace.ts';
import { measureRestart } from './bench/restart.ts';
import { measureEventStreams } from './bench/event-streams.ts';

// Every Relay this run starts runs the build `prebench` made, even if a source is edited meanwhile:
// otherwise bin/relay.js would switch to the sources (tsx: a loader isolate per thread, ~50 MB more),
// which is what gave session 16's run 2 four isolates in its hostile mix.
process.env.RELAY_FROM_BUILD = '1';

const duration = Number(process.argv[process.argv.indexOf('--duration') + 1]) || 5;
/** Paired measures: this many anchor/Relay slices of `slice` seconds each. */
const rounds = Number(process.argv[process.argv.indexOf('--rounds') + 1]) || 4;
const slice = Math.max(1, Math.round((duration * 2) / rounds));
/** As issue 28 measures: 50 connections (sessions 5–12 used 10: their ratios do not compare). */
const connections = 50;
const onKafka = process.argv.includes('--broker') && process.argv[process.argv.indexOf('--broker') + 1] === 'kafka';
const kafkaScript = path.join(ROOT, 'scripts/kafka-local.sh');
const kafkaBrokers = () => {
  if (process.env.KAFKA_BROKERS) return process.env.KAFKA_BROKERS;
  execFileSync(kafkaScript, ['start'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return '127.0.0.1:9092';
};

/** Kafka's own producer (acks=all, idempotent) for records of `size` bytes: records per second. */
const kafkaAnchor = (brokers: string, topic: string, size: number): number => {
  const classpath = execFileSync(kafkaScript, ['classpath']).toString().trim();
  const out = execFileSync('java', [
    '-cp', classpath, 'org.apache.kafka.tools.ProducerPerformance',
    '--topic', topic, '--num-records', '300000', '--record-size', String(size), '--throughput', '-1',
    '--producer-props', `bootstrap.servers=${brokers}`, 'acks=all', 'enable.idempotence=true',
  ]).toString();
  const match = /records sent, ([\d.]+) records\/sec/.exec(out.trim().split('\n').pop() ?? '');
  if (!match) throw new Error(`ProducerPerformance printed no summary:\n${out}`);
  return Number(match[1]);
};

const startProcess = async (args: string[], env: Record<string, string>, port: number): Promise<ChildProcess> => {
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (let i = 0; i < 600; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/health`).catch(() => fetch(`http://127.0.0.1:${port}/api/v1/health`));
      if (res.status < 500) return child;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`process ${args.join(' ')} did not start`);
};

/** SIGTERM, then the child's exit (or SIGKILL after 30 s). */
const stopped = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });

type Measured = { rps: number; p50: number; p99: number };
/** What autocannon loads: a URL and its request options. */
type Target = [url: string, options: Partial<autocannon.Options>];

/** One autocannon run of `seconds`; a non-2xx answer or a socket error fails the benchmark. */
const run = async (url: string, options: Partial<autocannon.Options>, seconds: number): Promise<Measured> => {
  const result = await autocannon({ url, connections, duration: seconds, ...options });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, p50: result.latency.p50, p99: result.latency.p99 };
};

const median = (values: number[]) => percentile(values, 50);

/** Each thread's V8 heap, used/total in MB, as `/metrics` gives it (relay_thread_heap_bytes). */
const threadHeaps = async (base: string): Promise<string> => {
  const text = await (await fetch(`${base}/metrics`)).text();
  const mb = (thread: string, measure: string) => {
    const series = `relay_thread_heap_bytes{thread="${thread}",measure="${measure}"} `;
    const line = text.split('\n').find((l) => l.startsWith(series));
    return line === undefined ? '?' : (Number(line.slice(series.length)) / 1024 / 1024).toFixed(0);
  };
  return ['api', 'pipeline'].map((thread) => `${thread} ${mb(thread, 'used')}/${mb(thread, 'total')}`).join(', ') + ' MB';
};

/** A load of `duration` seconds, after a 1 s warm-up (so that the code is measured optimised). */
const load = async (url: string, options: Partial<autocannon.Options> = {}): Promise<Measured> => {
  await run(url, options, 1);
  return run(url, options, duration);
};

/**
 * Relay and its anchor in alternating slices (anchor, Relay, anchor, Relay, ...), so that each
 * ratio compares the two under the same state of a shared VM: measured one after the other, a
 * change of the VM's speed between the two phases moved the ratio by up to a third. The ratio is
 * the median of the slices' ratios; Relay's req/s the mean of its slices, p50 the median, p99 the
 * highest.
 */
const paired = async (anchor: Target, relay: Target) => {
  await run(...anchor, 1);
  await run(...relay, 1);
  const anchors: Measured[] = [];
  const relays: Measured[] = [];
  for (let i = 0; i < rounds; i++) {
    anchors.push(await run(...anchor, slice));
    relays.push(await run(...relay, slice));
  }
  const summary = (slices: Measured[]): Measured => ({
    rps: slices.reduce((sum, m) => sum + m.rps, 0) / slices.length,
    p50: median(slices.map((m) => m.p50)),
    p99: Math.max(...slices.map((m) => m.p99)),
  });
  const ratios = relays.map((m, i) => m.rps / anchors[i]!.rps);
  return {
    anchor: summary(anchors),
    relay: summary(relays),
    ratio: median(ratios),
    /** The lowest and highest slice ratio: how far the VM moved the pairs of this run. */
    spread: `slices ${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)}`,
  };
};


const main = async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-bench-'));
  const barePort = await freePort();
  const relayPort = await freePort();
  const env = {
    DATA_DIR: dataDir,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    RATE_LIMIT_POLL_PER_MIN: '1000000000',
    RATE_LIMIT_SEND_FREE_PER_MIN: '1000000000',
    RATE_LIMIT_VERIFY_PER_MIN: '1000000000',
    MAX_CREDENTIALS_PER_USER: '100',
    ...(onKafka ? { BROKER: 'kafka', KAFKA_BROKERS: kafkaBrokers(), KAFKA_TOPIC_PREFIX: `${path.basename(dataDir)}.` } : {}),
  };
  const bare = await startProcess(['scripts/bench/bare-fastify.mjs'], {}, barePort);
  let relay = await startProcess(['bin/relay.js', 'start'], env, relayPort);
  const base = `http://127.0.0.1:${relayPort}`;
  const results: string[] = [];
  const row = (name: string, value: string) => {
    results.push(`| ${name} | ${value} |`);
    console.log(`${name}: ${value}`);
  };
  try {
    // An account, an app and a key, the way an operator makes them.
    const session = (await runCli(['session', 'create', '--email', 'bench@example.com'], { ...env, PORT: String(relayPort) })).stdout.trim();
    const dash = `${base}/dashboard/api/dashboard`;
    const headers = { cookie: `relay_session=${session}`, 'content-type': 'application/json' };
    const app = (await (await fetch(`${dash}/apps`, { method: 'POST', headers, body: JSON.stringify({ name: 'bench', protocol: ['signal'] }) })).json()) as { id: string };
    const key = ((await (await fetch(`${dash}/credentials`, { method: 'POST', headers, body: JSON.stringify({ type: 'api-key', appIds: [app.id], name: 'bench' }) })).json()) as { secret: string }).secret;
    await waitFor(
      async () => {
        const apps = (await (await fetch(`${dash}/apps`, { headers })).json()) as { items: Array<{ messengers: Array<{ status: string }> }> };
        return apps.items[0]!.messengers.every((m) => m.status === 'active') ? true : undefined;
      },
      60_000,
      "the bench app's messengers to be active",
      50,
    );
    // Nothing to do yet (its app's messengers are up): what an idle Relay costs its machine.
    const idleCpu = await cpuMsPerSecond(relay.pid!, 10);
    const auth = { authorization: `Bearer ${key}` };
    const message = (i: number) => ({ appId: app.id, messenger: 'signal', contactId: '+15550001', message: `bench message ${i} `.padEnd(120, 'x') });
    const sendBody = (n: number) => JSON.stringify({ messages: Array.from({ length: n }, (_, i) => message(i)) });

    const bareGetTarget: Target = [`http://127.0.0.1:${barePort}/health`, {}];
    const barePostTarget: Target = [`http://127.0.0.1:${barePort}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: sendBody(1) }];
    const health = await paired(bareGetTarget, [`${base}/api/v1/health`, {}]);
    const healthBesideHeaders = await paired([`http://127.0.0.1:${barePort}/health-with-headers`, {}], [`${base}/api/v1/health`, {}]);
    const verify = await paired(bareGetTarget, [`${base}/api/v1/auth/verify`, { headers: auth }]);
    const poll = await paired(bareGetTarget, [`${base}/api/v1/messages/poll`, { headers: auth }]);
    const send1Target: Target = [`${base}/api/v1/messages/send`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: sendBody(1) }];
    const send1 = await paired(barePostTarget, send1Target);
    // No goal: the same pair at twice the connections. A send of one is answered once its group
    // commit is synced, so at 50 connections the API thread waits part of each round for the
    // commit and the clients; with more sends in flight each commit carries more of them.
    const wideConnections = connections * 2;
    const wider = (target: Target): Target => [target[0], { ...target[1], connections: wideConnections }];
    const send1Wide = await paired(wider(barePostTarget), wider(send1Target));
    const send50 = await load(`${base}/api/v1/messages/send`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: sendBody(50) });
    const rss = rssMb(relay.pid!);
    const heaps = await threadHeaps(base);

    const maps = (m: ReturnType<typeof memoryMaps>) =>
      `anonymous (V8 heaps, thread arenas) ${m.anonymousMb.toFixed(0)}, C heap ${m.cHeapMb.toFixed(0)}, files (code) ${m.filesMb.toFixed(0)}, shared ${m.sharedMb.toFixed(0)} MB`;
    const fmt = (r: { rps: number; p50: number; p99: number }) => `${Math.round(r.rps)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms`;
    const ratio = (a: number, b: number) => (a / b).toFixed(2);
    row('bare Fastify GET (anchor, during health)', fmt(health.anchor));
    row('bare Fastify POST (anchor, during send 1)', fmt(send1.anchor));
    row('idle CPU', `${idleCpu.toFixed(0)} ms a second, all threads (role all, an app and a key, no requests; 10 s)`);
    row('health', `${fmt(health.relay)} — ${health.ratio.toFixed(2)}× bare GET (${health.spread}; target ≥ 0.95)`);
    row(
      'health beside a bare GET with the same headers',
      `${healthBesideHeaders.ratio.toFixed(2)}× (${healthBesideHeaders.spread}; the anchor at ${Math.round(healthBesideHeaders.anchor.rps)} req/s with the interface's four security headers, which the plain anchor does not send)`,
    );
    row('verify', `${fmt(verify.relay)} — ${verify.ratio.toFixed(2)}× bare GET (${verify.spread}; target ≥ 0.8)`);
    row('empty poll', `${fmt(poll.relay)} — ${poll.ratio.toFixed(2)}× bare GET (${poll.spread}; target ≥ 0.7)`);
    row('send 1 message', `${fmt(send1.relay)} — ${send1.ratio.toFixed(2)}× bare POST (${send1.spread}; target ≥ 0.35)`);
    row(
      `send 1 message at ${wideConnections} connections (no goal)`,
      `${fmt(send1Wide.relay)} — ${send1Wide.ratio.toFixed(2)}× bare POST at ${wideConnections} connections (${send1Wide.spread}; the anchor at ${Math.round(send1Wide.anchor.rps)} req/s): how the send of one grows with sends in flight per commit`,
    );
    row('send 50 messages', `${fmt(send50)} — ${Math.round(send50.rps * 50)} accepted messages/s (target ≥ ${onKafka ? '25,000' : '50,000'})`);
    row('RSS after load', `${rss.toFixed(0)} MB (target ≤ 200): ${maps(memoryMaps(relay.pid!))}; V8 heaps used/total: ${heaps}`);

    // Let the delivery worker drain the backlog the load left (every message accepted so far
    // delivered, by the metrics), then measure latencies one at a time.
    const simulator = new SimulatorStore(dataDir);
    const drainStart = Date.now();
    const counter = (text: string, name: string) =>
      text.split('\n').filter((line) => line.startsWith(`${name}{`)).reduce((sum, line) => sum + Number(line.slice(line.lastIndexOf(' ') + 1)), 0);
    let delivered = 0;
    for (;;) {
      const metrics = await (await fetch(`${base}/metrics`)).text();
      delivered = counter(metrics, 'relay_messages_delivered_total');
      if (delivered >= counter(metrics, 'relay_messages_accepted_total') || Date.now() - drainStart > 180_000) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    row('backlog drained', `${delivered} deliveries in ${((Date.now() - drainStart) / 1000).toFixed(1)} s after the load`);

    const deliveryLatency: number[] = [];
    for (let i = 0; i < 300; i++) {
      const res = await fetch(`${base}/api/v1/messages/send`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: sendBody(1) });
      const acceptedAt = Date.now();
      const { successfulMessages } = (await res.json()) as { successfulMessages: Array<{ messageId: string }> };
      const id = successfulMessages[0]!.messageId;
      // The simulator stamps the delivery itself, so looking every millisecond does not move the
      // figure; looking on every turn of this loop kept a core busy that the delivery needs.
      const delivered = await waitFor(() => simulator.deliveries({ messageId: id })[0], 10_000, `the delivery of message ${i}`, 1);
      deliveryLatency.push(Math.max(0, delivered.at - acceptedAt));
    }
    row('accepted → delivered', `p50 ${percentile(deliveryLatency, 50)} ms, p99 ${percentile(deliveryLatency, 99)} ms (target p99 ≤ ${onKafka ? 100 : 20})`);

    const pollable: number[] = [];
    for (let i = 0; i < 100; i++) {
      const t0 = performance.now();
      const injected = await runCli(['simulate', 'inbound', '--app', app.id, '--messenger', 'signal', '--contact', '+15550002', '--text', `in ${i}`], { ...env, PORT: String(relayPort) });
      if (injected.code !== 0) throw new Error(injected.stderr);
      const received = performance.now();
      // Polled back to back, as an eager client would: each poll is a request to the server.
      await waitFor(
        async () => (((await (await fetch(`${base}/api/v1/messages/poll?limit=1`, { headers: auth })).json()) as { count: number }).count > 0 ? true : undefined),
        10_000,
        `inbound message ${i} to be pollable`,
        0,
      );
      pollable.push(performance.now() - received);
      void t0;
    }
    row(
      'inbound → pollable',
      `p50 ${percentile(pollable, 50).toFixed(1)} ms, p99 ${percentile(pollable, 99).toFixed(1)} ms, from the CLI process’s append to the server’s poll (target p99 ≤ ${onKafka ? 50 : 10})`,
    );
    await measureEventStreams({ base, dash, headers, relayPid: relay.pid!, row });
    const nested = await measureNestedJson(base, 30);
    row(
      'health p99 under 3 anonymous clients sending a million nested [',
      `${nested.attackedP99.toFixed(1)} ms against ${nested.quietP99.toFixed(1)} ms quiet: ${(nested.attackedP99 / nested.quietP99).toFixed(2)}× (target ≤ 2×); ${nested.attackRequests} attacking requests in 30 s, answered ${JSON.stringify(nested.statuses)}`,
    );
    if (onKafka) {
      // The anchor: Kafka's own producer, records the size of an outbound record of this run (a reference: the body is sealed in the store).
      const sample = { message: { messageId: 'x'.repeat(32), appId: app.id, messenger: 'signal', keyId: 'x'.repeat(36), batchId: 'x'.repeat(36) }, attempt: 1 };
      const size = JSON.stringify(sample).length;
      const anchor = kafkaAnchor(env.KAFKA_BROKERS!, `${env.KAFKA_TOPIC_PREFIX}anchor`, size);
      row('Kafka ProducerPerformance', `${Math.round(anchor)} records/s of ${size} bytes (acks=all, idempotent)`);
      row('send 50 vs Kafka producer', `${ratio(send50.rps * 50, anchor)}× Kafka’s own producer`);
    }
    simulator.close();
    // A hostile tenant's and anonymous clients' mix, on a Relay of its own (issue 23, item 8).
    const mix = await measureHostileMix(45);
    const heap = (mb: number[]) => mb.map((m) => m.toFixed(0)).join(' + ');
    row(
      'RSS after a 45 s hostile mix',
      `${mix.rssAfterMb.toFixed(0)} MB from ${mix.rssStartMb.toFixed(0)} MB (target ≤ 250); heap after a forced collection ${heap(mix.heapAfterMb)} MB (main + pipeline thread); requests ${JSON.stringify(mix.requests)}`,
    );
    row('where the RSS after the mix is', maps(mix.mapsAfter));
    mix.largestLater.forEach((kinds, thread) =>
      row(`heap snapshot a minute after the mix, ${thread === 0 ? 'main' : 'pipeline'} thread: largest kinds`, kinds.map((k) => `${k.kind} ${k.mb.toFixed(1)}`).join(', ') + ' MB'),
    );
    row(
      'RSS a minute after the mix',
      `${mix.rssMinuteLaterMb.toFixed(0)} MB: ${((mix.rssMinuteLaterMb / mix.rssStartMb - 1) * 100).toFixed(0)} % over the start (target ≤ 20 %); heap ${heap(mix.heapMinuteLaterMb)} MB`,
    );
    // The dashboard's statistics: a day of a busy app (issue 25: a day's page under a second).
    const statistics = await measureStatistics({ events: 1_000_000, storeEvents: 200_000 });
    for (const [measure, result] of statisticsRows(statistics)) row(measure, result);
    // Delivery to the real signal-cli at its own pace, against Signal's mock server (issue 28, item 4).
    try {
      // Measured again once if signal-cli failed a send (it did in one bench run of session 19, and
      // in none of eighteen runs alone: a figure the issue asks for is not lost to it); a row says so.
      const pace = await measureSignalPace(200).catch(async (error: unknown) => {
        row('Relay → signal-cli, first attempt', `failed, measured again: ${error instanceof Error ? error.message : String(error)}`);
        return measureSignalPace(200);
      });
      row(`signal-cli send (mock server), ${pace.inFlight} in flight`, `${pace.daemonPerSecond.toFixed(1)} messages/s decrypted by the contact (median of ${pace.rounds} rounds of ${pace.messages})`);
      row(
        'Relay → signal-cli (same daemon, same contact)',
        `${pace.relayPerSecond.toFixed(1)} messages/s: ${pace.ratio.toFixed(2)}× the daemon's own, the median of ${pace.rounds} alternating pairs (goal ≥ 0.9)`,
      );
    } catch (error) {
      row('Relay → signal-cli', `not measured: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Session on the fake swarm, direct and through onion paths (issue 46).
    try {
      for (const [measure, result] of sessionRows(await measureSessionNetwork(200))) row(measure, result);
    } catch (error) {
      row('Session on the fake swarm', `not measured: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Takeover across two instances on Kafka and PostgreSQL (docs/durability.md).
    try {
      const failover = await measureFailover(onKafka ? env.KAFKA_BROKERS! : kafkaBrokers(), process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');
      row('failover: kill → pop of a queued message', `${failover.queuedMs} ms (the survivor serves what was queued at once)`);
      row('failover: kill → pop of a message written after the kill', `${failover.takeoverMs} ms (the survivor takes the publisher's lease over; target ≤ 15,000)`);
    } catch (error) {
      row('failover takeover', `not measured: ${error instanceof Error ? error.message : String(error)}`);
    }
    // Restart after a SIGKILL with this run's history in place (issue 28, item 3).
    const restart = await measureRestart(relay, { ...env }, relayPort);
    relay = restart.restarted;
    row(
      'restart after SIGKILL → health 200',
      `${Math.round(restart.figures.withHistoryMs)} ms with this run's history (${restart.figures.historyMb.toFixed(0)} MB) in place (target ≤ 1,500); a first start on an empty directory ${Math.round(restart.figures.emptyMs)} ms`,
    );
  } finally {
    // Relay still writes its files while it stops: remove its data directory once it has exited.
    await Promise.all([relay, bare].map((child) => stopped(child)));
  }
  console.log(`\n| measure | result |\n|---|---|\n${results.join('\n')}`);
  console.log(
    `\nnode ${process.version}, ${os.cpus().length} cores, ${connections} connections; paired measures: ${rounds} × (${slice} s anchor + ${slice} s Relay); send of 50: ${duration} s`,
  );
  fs.rmSync(dataDir, { recursive: true, force: true });
};

await main();
