/**
 * Where the time goes when a Relay process on Kafka is restarted right after a SIGKILL
 * (docs/kafka-startup.md):
 *
 *   node --import tsx scripts/kafka/startup-timing.ts [rounds] [brokers]
 *
 * Each round, on a topic prefix of its own: process A joins the `delivery` group and tails the
 * inbound topic (scripts/kafka/startup-child.ts consume); once it has handled a record it is
 * SIGKILLed, a record is published to every delivery topic and one to the inbound topic, and
 * process B starts at once and times each start-up step (startup-child.ts restart). Prints each
 * round's steps, then the median per step. Needs a running Kafka (npm run kafka:start).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { createEventStorePopCursors } from '../../infra/broker/kafka/event-store-pop-cursors.ts';
import { createKafkaBroker } from '../../infra/broker/kafka/kafka-broker.ts';

const DELIVERY_TOPICS = ['outbound.signal', 'outbound.simplex', 'outbound.session', 'outbound.retry.1', 'outbound.retry.2'];
const INBOUND_TOPIC = 'inbound.timing';
const rounds = Number(process.argv[2] ?? 3);
const brokers = process.argv[3] ?? process.env.KAFKA_BROKERS ?? '127.0.0.1:9092';
const root = fileURLToPath(new URL('../../', import.meta.url));
const child = fileURLToPath(new URL('./startup-child.ts', import.meta.url));

interface Step {
  step: string;
  ms: number;
  at: number;
}

const run = (args: string[], onLine: (line: Step) => void) => {
  const proc = spawn(process.execPath, ['--import', 'tsx', child, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
  let partial = '';
  proc.stdout.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop()!;
    for (const part of parts) if (part.trim() !== '') onLine(JSON.parse(part) as Step);
  });
  const exited = new Promise<number | null>((resolve) => proc.on('close', (code) => resolve(code)));
  return { proc, exited };
};

const results: Step[][] = [];
for (let round = 0; round < rounds; round++) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-kafka-startup-'));
  const eventsFile = path.join(dir, 'events.db');
  const prefix = `timing-${randomUUID().slice(0, 8)}.`;
  const store = createSqliteEventStore({ path: eventsFile, pollIntervalMs: 5 });
  const parent = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), prefix, partitions: 3 });
  await parent.ensureTopics([...DELIVERY_TOPICS, INBOUND_TOPIC]);
  await parent.publish(DELIVERY_TOPICS.map((topic) => ({ topic, key: 'warm-up', value: '{"warmUp":true}' })));

  const a = run([brokers, prefix, eventsFile, 'consume'], () => undefined);
  const readyA = new Promise<void>((resolve) => {
    a.proc.stdout.on('data', (chunk: Buffer) => chunk.toString().includes('"ready"') && resolve());
  });
  await Promise.race([readyA, a.exited.then((code) => Promise.reject(new Error(`process A exited (${code}) before it was ready`)))]);
  a.proc.kill('SIGKILL');
  await a.exited;
  await parent.publish([
    ...DELIVERY_TOPICS.map((topic) => ({ topic, key: 'after-kill', value: '{"afterKill":true}' })),
    { topic: INBOUND_TOPIC, key: 'c', value: '{"inbound":true}' },
  ]);
  const steps: Step[] = [];
  const b = run([brokers, prefix, eventsFile, 'restart'], (line) => steps.push(line));
  const code = await b.exited;
  if (code !== 0) throw new Error(`process B exited with ${code}`);
  results.push(steps);
  console.log(`round ${round + 1}:`);
  for (const { step, ms, at } of steps) console.log(`  ${step.padEnd(72)} ${String(ms).padStart(6)} ms   (at ${at} ms)`);
  await parent.deleteTopics([...DELIVERY_TOPICS, INBOUND_TOPIC]).catch(() => undefined);
  await parent.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)]!;
console.log(`median of ${rounds} rounds (ms: the step's own time; at: since process B started):`);
for (const { step } of results[0]!) {
  const same = results.map((steps) => steps.find((s) => s.step === step)).filter((s): s is Step => s !== undefined);
  console.log(`  ${step.padEnd(72)} ${String(median(same.map((s) => s.ms))).padStart(6)} ms   (at ${median(same.map((s) => s.at))} ms)`);
}
