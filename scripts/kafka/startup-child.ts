/**
 * One Relay-like process on Kafka, for scripts/kafka/startup-timing.ts:
 *
 *   node --import tsx scripts/kafka/startup-child.ts <brokers> <prefix> <events.db> consume|restart
 *
 * `consume`: joins the `delivery` group over the delivery topics (as a delivery worker does), pops
 * the inbound topic once (so that it has an inbox tail), prints `ready` once it has handled the
 * warm-up record, then stays alive until it is SIGKILLed.
 * `restart`: the process started right after the kill. It does what Relay's start-up does with the
 * broker, one step after the other, and prints one JSON line per step: `{ step, ms, at }` (`ms` the
 * step's own duration, `at` milliseconds since the process started).
 */
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { createEventStorePopCursors } from '../../infra/broker/kafka/event-store-pop-cursors.ts';
import { createKafkaBroker } from '../../infra/broker/kafka/kafka-broker.ts';
import type { ConsumedRecord } from '../../infra/broker/port.ts';

export const DELIVERY_TOPICS = ['outbound.signal', 'outbound.simplex', 'outbound.session', 'outbound.retry.1', 'outbound.retry.2'];
export const INBOUND_TOPIC = 'inbound.timing';

const [brokers, prefix, eventsFile, mode] = process.argv.slice(2);
if (!brokers || prefix === undefined || !eventsFile || (mode !== 'consume' && mode !== 'restart'))
  throw new Error('usage: startup-child.ts <brokers> <prefix> <events.db> consume|restart');

const print = (line: unknown) => fs.writeSync(1, `${JSON.stringify(line)}\n`);
// Log lines of the adapter that say when a group was joined (printed with their time; the group
// without the round's prefix, so that rounds compare).
const log = pino(
  { level: 'info' },
  {
    write: (line: string) => {
      const entry = JSON.parse(line) as { msg: string; groupId?: string };
      const group = (entry.groupId ?? '').slice(prefix.length);
      if (entry.msg.includes('joined')) print({ step: `log: ${entry.msg} (${group})`, ms: 0, at: Math.round(performance.now()) });
    },
  },
);
const store = createSqliteEventStore({ path: eventsFile, pollIntervalMs: 5 });
const deadline = (ms: number) => Date.now() + ms;

const started = performance.now();
const broker = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), prefix, partitions: 3, log });
const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
  const from = performance.now();
  const value = await run();
  const to = performance.now();
  print({ step: name, ms: Math.round(to - from), at: Math.round(to) });
  return value;
};
print({ step: 'adapter created', ms: Math.round(performance.now() - started), at: Math.round(performance.now()) });

const handled: ConsumedRecord[] = [];
let firstHandled: (() => void) | undefined;
const handledOnce = new Promise<void>((resolve) => (firstHandled = resolve));

if (mode === 'consume') {
  await broker.ensureTopics([...DELIVERY_TOPICS, INBOUND_TOPIC]);
  await broker.consume({
    groupId: 'delivery',
    topics: DELIVERY_TOPICS,
    handler: async (records) => {
      handled.push(...records);
      firstHandled?.();
    },
  });
  await broker.pop(INBOUND_TOPIC, 1);
  await handledOnce;
  print({ step: 'ready', ms: 0, at: Math.round(performance.now()) });
  setInterval(() => undefined, 60_000);
} else {
  await step('isReady() true', async () => {
    const until = deadline(30_000);
    while (!broker.isReady() && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
  });
  await step('ping', () => broker.ping());
  await step('ensureTopics (6 topics)', () => broker.ensureTopics([...DELIVERY_TOPICS, INBOUND_TOPIC]));
  const consumeAt = performance.now();
  await step('consume() resolved', () =>
    broker.consume({
      groupId: 'delivery',
      topics: DELIVERY_TOPICS,
      handler: async (records) => {
        handled.push(...records);
        firstHandled?.();
      },
    }),
  );
  const popAt = performance.now();
  await step('first pop of an inbound topic (tail joins, catches up)', async () => {
    const until = deadline(60_000);
    while (Date.now() < until) if ((await broker.pop(INBOUND_TOPIC, 10)).length > 0) return;
    throw new Error('the inbound record was not popped within 60 s');
  });
  print({ step: 'pop: from its call', ms: Math.round(performance.now() - popAt), at: Math.round(performance.now()) });
  await handledOnce;
  print({ step: 'first delivery record handled: from consume() called', ms: Math.round(performance.now() - consumeAt), at: Math.round(performance.now()) });
  await broker.close();
  await store.close();
  print({ step: 'done', ms: 0, at: Math.round(performance.now()) });
}
