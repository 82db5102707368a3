/**
 * `node --import tsx scripts/bench/tail-idle.ts <topics> [seconds]`: the idle CPU of a Kafka broker
 * adapter whose inbox tail follows <topics> one-partition topics (issue 49: on Kafka, what an idle
 * Relay costs per app it pops from), then how long following one more takes (three times, 3 s apart).
 * Kafka at KAFKA_BROKERS (127.0.0.1:9092: `npm run kafka:start`). TAIL_CREATE=1 publishes a record to
 * each topic first (once per TAIL_PREFIX); INBOX_TAIL_WAIT_MS sets the tail's fetch wait.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { createEventStorePopCursors } from '../../infra/broker/kafka/event-store-pop-cursors.ts';
import { createKafkaBroker } from '../../infra/broker/kafka/kafka-broker.ts';

const count = Number(process.argv[2] ?? 100);
const seconds = Number(process.argv[3] ?? 20);
const waitMs = process.env.INBOX_TAIL_WAIT_MS === undefined ? undefined : Number(process.env.INBOX_TAIL_WAIT_MS);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tail-idle-'));
const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), pollIntervalMs: 1_000 });
const broker = createKafkaBroker({
  brokers: (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(','),
  cursors: createEventStorePopCursors(store),
  prefix: process.env.TAIL_PREFIX ?? `tail-idle-${count}.`,
  topicPolicy: () => ({ partitions: 1 }),
  probeIntervalMs: 600_000,
  ...(waitMs === undefined ? {} : { inboxTailWaitMs: waitMs }),
});
const topics = Array.from({ length: count }, (_, i) => `inbound.app${i}`);
const later = Array.from({ length: 3 }, (_, i) => `inbound.later${i}`);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
try {
  if (process.env.TAIL_CREATE) {
    for (let i = 0; i < topics.length; i += 200) await broker.publish(topics.slice(i, i + 200).map((topic) => ({ topic, key: 'k', value: '{}' })));
    await broker.publish(later.map((topic) => ({ topic, key: 'k', value: '{}' })));
  }
  const followStart = Date.now();
  for (let i = 0; i < topics.length; i += 50) await Promise.all(topics.slice(i, i + 50).map((topic) => broker.pop(topic, 10)));
  const followAllMs = Date.now() - followStart;
  await pause(5_000);
  const before = process.cpuUsage();
  const started = performance.now();
  await pause(seconds * 1_000);
  const used = process.cpuUsage(before);
  const idlePercent = ((used.user + used.system) / 1_000 / (performance.now() - started)) * 100;
  const followOneMs: number[] = [];
  for (const topic of later) {
    await pause(3_000);
    const at = performance.now();
    await broker.pop(topic, 10);
    followOneMs.push(Math.round(performance.now() - at));
  }
  console.log(JSON.stringify({ topics: count, tailWaitMs: waitMs ?? 'default', idlePercentOfACore: Number(idlePercent.toFixed(2)), followAllMs, followOneMs }));
} finally {
  await broker.close();
  await store.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
