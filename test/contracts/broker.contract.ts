import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  BrokerUnavailableError,
  RecordTooLargeError,
  type Broker,
  type ConsumeOptions,
  type ConsumedRecord,
  type Consumer,
  type OutgoingRecord,
  type TopicPolicy,
} from '../../infra/broker/port.ts';
import { eventually } from '../support/eventually.ts';

/** What the suite asks of the broker it gets: the fixture passes it to the adapter. */
export interface FixtureOptions {
  /** The suite's topic policy: `expiring.*` topics keep records `SUITE_RETENTION_MS`; `inbound.*` have one partition. */
  readonly topicPolicy: (topic: string) => TopicPolicy;
}

/** Retention of the suite's `expiring.*` topics. */
export const SUITE_RETENTION_MS = 1500;

const suitePolicy = (topic: string): TopicPolicy => {
  if (topic.startsWith('expiring.')) return { partitions: 2, retentionMs: SUITE_RETENTION_MS };
  if (topic.startsWith('inbound.')) return { partitions: 1 };
  return { partitions: 3 };
};

export interface BrokerFixture {
  broker: Broker;
  /** What only some adapters do. `dedupesById`: a second record with the same id on a topic is dropped. */
  capabilities: { dedupesById: boolean };
  /** Another instance (connection, process) on the same backing broker; the suite closes it. */
  second?: () => Promise<Broker>;
  teardown: () => Promise<void>;
}

const gate = () => {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, opened };
};

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
const record = (topic: string, n: number, extra: Partial<OutgoingRecord> = {}): OutgoingRecord => ({
  topic,
  key: 'k',
  value: JSON.stringify({ n }),
  headers: { n: String(n) },
  ...extra,
});
const numberOf = (r: ConsumedRecord): number => (JSON.parse(r.value) as { n: number }).n;

/**
 * What every Broker adapter must do: the embedded SQLite log, and Kafka next. Nothing here assumes
 * one partition (order is asserted per key), synchronous visibility (reads are polled) or fast group
 * joins (a consumer is first shown to receive before timing matters). Topic and group names are
 * unique per test so that a shared real broker can run the suite.
 */
export function brokerContract(name: string, factory: (options: FixtureOptions) => Promise<BrokerFixture>): void {
  describe(`Broker contract: ${name}`, () => {
    let fixture: BrokerFixture;
    let broker: Broker;
    let consumers: Consumer[];
    let seconds: Broker[];
    const unique = (prefix: string) => `${prefix}.${randomUUID().slice(0, 8)}`;

    const consume = async (on: Broker, options: ConsumeOptions): Promise<Consumer> => {
      const consumer = await on.consume(options);
      consumers.push(consumer);
      return consumer;
    };
    /** A consumer that collects what it is handed; `seen` grows as batches are handled. */
    const collect = async (groupId: string, topics: string[], on: Broker = broker, batchSize?: number) => {
      const seen: ConsumedRecord[] = [];
      const consumer = await consume(on, { groupId, topics, batchSize, handler: async (records) => void seen.push(...records) });
      return { seen, consumer };
    };
    const secondBroker = async (): Promise<Broker | undefined> => {
      if (fixture.second === undefined) return undefined;
      const other = await fixture.second();
      seconds.push(other);
      return other;
    };
    /** Pops until `count` records came back, each call asking for at most `max`. */
    const popAll = async (topic: string, count: number, max: number, on: Broker = broker): Promise<ConsumedRecord[]> => {
      const got: ConsumedRecord[] = [];
      let largest = 0;
      await eventually(async () => {
        const popped = await on.pop(topic, max);
        largest = Math.max(largest, popped.length);
        got.push(...popped);
        expect(got.length).toBeGreaterThanOrEqual(count);
      });
      expect(largest).toBeLessThanOrEqual(max);
      return got;
    };

    beforeEach(async () => {
      consumers = [];
      seconds = [];
      fixture = await factory({ topicPolicy: suitePolicy });
      broker = fixture.broker;
    });
    afterEach(async () => {
      await Promise.all(consumers.map((consumer) => consumer.stop()));
      await Promise.all(seconds.map((other) => other.close()));
      await fixture.teardown();
    });

    it('hands published records to a consumer in order per key, with their fields', async () => {
      const topic = unique('outbound');
      await broker.ensureTopics([topic]);
      const before = Date.now();
      await broker.publish(range(0, 20).map((n) => record(topic, n, { key: n % 2 === 0 ? 'even' : 'odd', id: `m${n}` })));
      const after = Date.now();
      const { seen } = await collect(unique('g'), [topic]);
      await eventually(() => expect(seen).toHaveLength(20));
      expect(seen.filter((r) => r.key === 'even').map(numberOf)).toEqual(range(0, 20).filter((n) => n % 2 === 0));
      expect(seen.filter((r) => r.key === 'odd').map(numberOf)).toEqual(range(0, 20).filter((n) => n % 2 === 1));
      const third = seen.find((r) => numberOf(r) === 3)!;
      expect(third).toMatchObject({ topic, key: 'odd', value: '{"n":3}', headers: { n: '3' }, id: 'm3', dueAt: undefined });
      expect(third.timestamp).toBeGreaterThanOrEqual(before - 5000);
      expect(third.timestamp).toBeLessThanOrEqual(after + 5000);
      for (const partition of new Set(seen.map((r) => r.partition))) {
        const offsets = seen.filter((r) => r.partition === partition).map((r) => r.offset);
        expect(offsets.every((offset, i) => typeof offset === 'bigint' && (i === 0 || offset > offsets[i - 1]!))).toBe(true);
      }
    });

    it('a new member of the group resumes after the last committed record and gets nothing again', async () => {
      const topic = unique('outbound');
      const group = unique('g');
      await broker.publish(range(0, 10).map((n) => record(topic, n)));
      const first: number[] = [];
      const third = gate();
      const release = gate();
      let calls = 0;
      const c1 = await consume(broker, {
        groupId: group,
        topics: [topic],
        batchSize: 2,
        handler: async (records) => {
          if (++calls === 3) {
            third.open();
            await release.opened; // stop() is called while this batch is in flight
          }
          first.push(...records.map(numberOf));
        },
      });
      await third.opened;
      const stopping = c1.stop();
      release.open();
      await stopping;
      expect(first).toEqual(range(0, 6));
      await broker.publish([...range(10, 15).map((n) => record(topic, n)), record(topic, 99)]);
      const { seen } = await collect(group, [topic]);
      await eventually(() => expect(seen.map(numberOf)).toContain(99));
      expect(seen.map(numberOf)).toEqual([...range(6, 15), 99]);
    });

    it('every group gets every record', async () => {
      const topic = unique('outbound');
      const a = await collect(unique('ga'), [topic]);
      const b = await collect(unique('gb'), [topic]);
      await broker.publish(range(0, 5).map((n) => record(topic, n)));
      await eventually(() => expect([a.seen.length, b.seen.length]).toEqual([5, 5]));
      expect(a.seen.map(numberOf)).toEqual(range(0, 5));
      expect(b.seen.map(numberOf)).toEqual(range(0, 5));
    });

    it('members of one group share the records: each is handed to one of them', async () => {
      const topic = unique('outbound');
      const group = unique('g');
      await broker.ensureTopics([topic]);
      const other = (await secondBroker()) ?? broker;
      const members = [await collect(group, [topic]), await collect(group, [topic]), await collect(group, [topic], other)];
      await broker.publish(range(0, 30).map((n) => record(topic, n, { key: `k${n % 5}` })));
      await broker.publish([record(topic, 99, { key: 'k0' })]);
      const all = () => members.flatMap((m) => m.seen.map(numberOf));
      await eventually(() => expect(all()).toContain(99));
      await broker.publish([record(topic, 100, { key: 'k0' })]);
      await eventually(() => expect(all()).toContain(100));
      await new Promise((resolve) => setTimeout(resolve, 250)); // time for a member that should not get them
      expect(all().sort((x, y) => x - y)).toEqual([...range(0, 30), 99, 100]);
    });

    it('records published through another instance reach a consumer', async () => {
      const other = await secondBroker();
      if (other === undefined) return;
      const topic = unique('outbound');
      const { seen } = await collect(unique('g'), [topic]);
      await other.publish(range(0, 3).map((n) => record(topic, n)));
      await eventually(() => expect(seen.map(numberOf)).toEqual([0, 1, 2]));
    });

    it('batches hold at most batchSize records of one topic, handed one call at a time', async () => {
      const topics = [unique('outbound'), unique('outbound')];
      let active = 0;
      let overlapped = false;
      const batches: ConsumedRecord[][] = [];
      await consume(broker, {
        groupId: unique('g'),
        topics,
        batchSize: 4,
        handler: async (records) => {
          overlapped ||= active > 0;
          active++;
          await new Promise((resolve) => setTimeout(resolve, 2));
          batches.push(records);
          active--;
        },
      });
      await broker.publish(topics.flatMap((topic) => range(0, 10).map((n) => record(topic, n))));
      await eventually(() => expect(batches.flat()).toHaveLength(20));
      expect(overlapped).toBe(false);
      for (const batch of batches) {
        expect(batch.length).toBeLessThanOrEqual(4);
        expect(new Set(batch.map((r) => `${r.topic}/${r.partition}`)).size).toBe(1);
      }
      for (const topic of topics) expect(batches.flat().filter((r) => r.topic === topic).map(numberOf)).toEqual(range(0, 10));
    });

    it('a handler that throws gets the same records again; nothing is skipped', async () => {
      const topic = unique('outbound');
      const errors: unknown[] = [];
      const calls: number[][] = [];
      await consume(broker, {
        groupId: unique('g'),
        topics: [topic],
        handler: async (records) => {
          calls.push(records.map(numberOf));
          if (calls.length <= 2) throw new Error(`handler down ${calls.length}`);
        },
        onError: (error) => errors.push(error),
      });
      await broker.publish(range(0, 3).map((n) => record(topic, n)));
      await eventually(() => expect(calls.length).toBeGreaterThanOrEqual(3));
      await broker.publish([record(topic, 3)]);
      await eventually(() => expect(calls.flat()).toContain(3));
      expect(errors.map((e) => (e as Error).message)).toEqual(['handler down 1', 'handler down 2']);
      expect(calls[1]!.slice(0, calls[0]!.length)).toEqual(calls[0]);
      expect(calls[2]!.slice(0, calls[0]!.length)).toEqual(calls[0]);
      expect(calls.slice(2).flat()).toEqual([0, 1, 2, 3]);
    });

    it('a record is not handed before its due time, and does not hold up another topic', async () => {
      const retry = unique('retry');
      const main = unique('outbound');
      const seen: Array<{ n: number; at: number }> = [];
      await consume(broker, {
        groupId: unique('g'),
        topics: [retry, main],
        handler: async (records) => void seen.push(...records.map((r) => ({ n: numberOf(r), at: Date.now() }))),
      });
      await broker.publish([record(main, 0)]);
      await eventually(() => expect(seen.map((s) => s.n)).toEqual([0])); // the group has joined
      const dueAt = Date.now() + 1500;
      await broker.publish([record(retry, 1, { dueAt })]);
      await broker.publish([record(main, 2)]);
      await eventually(() => expect(seen.map((s) => s.n)).toContain(2));
      expect(seen.find((s) => s.n === 2)!.at).toBeLessThan(dueAt);
      expect(seen.map((s) => s.n)).toEqual([0, 2]);
      await eventually(() => expect(seen.map((s) => s.n)).toEqual([0, 2, 1]));
      expect(seen[2]!.at).toBeGreaterThanOrEqual(dueAt - 5);
    });

    it('pop is destructive and ordered', async () => {
      const topic = unique('inbound');
      await broker.publish(range(0, 5).map((n) => record(topic, n)));
      const got = await popAll(topic, 5, 3);
      expect(got.map(numberOf)).toEqual(range(0, 5));
      expect(await broker.pop(topic, 10)).toEqual([]);
      expect(await broker.depth(topic)).toBe(0);
    });

    it('pop leaves records that are not due yet', async () => {
      const topic = unique('inbound');
      await broker.publish([record(topic, 0, { dueAt: Date.now() + 60_000 }), record(topic, 1)]);
      expect((await popAll(topic, 1, 10)).map(numberOf)).toEqual([1]);
      expect(await broker.pop(topic, 10)).toEqual([]);
    });

    it('knownEmpty, where the adapter has it, says empty only when a pop would find nothing (records not due, or popped), and stops saying it once a record comes', async () => {
      const knownEmpty = broker.knownEmpty?.bind(broker);
      if (!knownEmpty) return;
      const topic = unique('inbound');
      expect(knownEmpty(topic)).toBe(false); // never looked at: not known
      await broker.publish([record(topic, 0, { dueAt: Date.now() + 60_000 }), record(topic, 1)]);
      expect((await popAll(topic, 1, 10)).map(numberOf)).toEqual([1]);
      await eventually(async () => {
        expect(await broker.pop(topic, 10)).toEqual([]);
        expect(knownEmpty(topic)).toBe(true);
      });
      await broker.publish([record(topic, 2)]);
      await eventually(() => expect(knownEmpty(topic)).toBe(false));
      expect((await popAll(topic, 1, 10)).map(numberOf)).toEqual([2]);
    });

    it('pop of an unknown topic returns nothing', async () => {
      expect(await broker.pop(unique('never'), 10)).toEqual([]);
    });

    it('concurrent pops return each record exactly once', async () => {
      const topic = unique('inbound');
      await broker.publish(range(0, 200).map((n) => record(topic, n)));
      await eventually(async () => expect(await broker.depth(topic)).toBe(200));
      const got: number[] = [];
      const sizes: number[] = [];
      await eventually(async () => {
        const results = await Promise.all(range(0, 20).map(() => broker.pop(topic, 10)));
        sizes.push(...results.map((popped) => popped.length));
        got.push(...results.flat().map(numberOf));
        expect(got.length).toBeGreaterThanOrEqual(200);
      });
      expect(Math.max(...sizes)).toBeLessThanOrEqual(10);
      expect(got.sort((x, y) => x - y)).toEqual(range(0, 200));
      expect(await broker.pop(topic, 10)).toEqual([]);
    });

    it('a record popped through one instance is never popped through another', async () => {
      const other = await secondBroker();
      if (other === undefined) return;
      const topic = unique('inbound');
      await broker.publish(range(0, 100).map((n) => record(topic, n)));
      const firstHalf = (await popAll(topic, 50, 50)).map(numberOf);
      expect(firstHalf).toEqual(range(0, 50));
      const got: number[] = [];
      await eventually(async () => {
        const results = await Promise.all(range(0, 10).map((i) => (i % 2 === 0 ? other : broker).pop(topic, 5)));
        got.push(...results.flat().map(numberOf));
        expect(got.length).toBeGreaterThanOrEqual(50);
      });
      expect(got.sort((x, y) => x - y)).toEqual(range(50, 100));
      expect(await other.pop(topic, 100)).toEqual([]);
    });

    it('depth counts what is left to pop, or what a group has not consumed', async () => {
      const inbound = unique('inbound');
      await broker.publish(range(0, 4).map((n) => record(inbound, n)));
      await eventually(async () => expect(await broker.depth(inbound)).toBe(4));
      await popAll(inbound, 1, 1);
      expect(await broker.depth(inbound)).toBe(3);

      const outbound = unique('outbound');
      const group = unique('g');
      await broker.publish(range(0, 3).map((n) => record(outbound, n)));
      const { seen, consumer } = await collect(group, [outbound]);
      await eventually(() => expect(seen).toHaveLength(3));
      await consumer.stop();
      await eventually(async () => expect(await broker.depth(outbound, group)).toBe(0));
      await broker.publish(range(3, 5).map((n) => record(outbound, n)));
      await eventually(async () => expect(await broker.depth(outbound, group)).toBe(2));
    });

    it('records with the same id on a topic are published once, even after a pop (if the adapter de-duplicates)', async () => {
      if (!fixture.capabilities.dedupesById) return;
      const topic = unique('inbound');
      await broker.publish([record(topic, 1, { id: 'same' }), record(topic, 2, { id: 'same' }), record(topic, 3, { id: 'other' })]);
      await broker.publish([record(topic, 4, { id: 'same' })]);
      expect((await popAll(topic, 2, 10)).map(numberOf)).toEqual([1, 3]);
      await broker.publish([record(topic, 5, { id: 'same' })]);
      expect(await broker.depth(topic)).toBe(0);
      expect(await broker.pop(topic, 10)).toEqual([]);
      const elsewhere = unique('inbound');
      await broker.publish([record(elsewhere, 6, { id: 'same' })]);
      expect((await popAll(elsewhere, 1, 10)).map(numberOf)).toEqual([6]);

      const outbound = unique('outbound');
      await broker.publish([record(outbound, 7, { id: 'x' }), record(outbound, 8, { id: 'x' })]);
      const { seen } = await collect(unique('g'), [outbound]);
      await broker.publish([record(outbound, 9, { id: 'x' }), record(outbound, 10, { id: 'y' })]);
      await eventually(() => expect(seen.map(numberOf)).toContain(10));
      expect(seen.map((r) => [numberOf(r), r.id])).toEqual([
        [7, 'x'],
        [10, 'y'],
      ]);
    });

    it('ensureTopics is idempotent', async () => {
      const topic = unique('inbound');
      await broker.ensureTopics([topic]);
      await broker.ensureTopics([topic, topic]);
      expect(await broker.depth(topic)).toBe(0);
      expect(await broker.pop(topic, 10)).toEqual([]);
    });

    it('stop() waits for the handler in flight', async () => {
      const topic = unique('outbound');
      const started = gate();
      const finish = gate();
      let finished = false;
      const consumer = await consume(broker, {
        groupId: unique('g'),
        topics: [topic],
        handler: async () => {
          started.open();
          await finish.opened;
          finished = true;
        },
      });
      await broker.publish([record(topic, 0)]);
      await started.opened;
      let stopped = false;
      const stopping = consumer.stop().then(() => (stopped = true));
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(stopped).toBe(false);
      finish.open();
      await stopping;
      expect(finished).toBe(true);
    });

    it('a pop whose accept rejects pops nothing, and rejects with that error: the next pop returns the same records', async () => {
      const topic = unique('inbound');
      await broker.publish(range(0, 5).map((n) => record(topic, n)));
      const refusal = new Error('cannot take these');
      const offered: number[][] = [];
      await eventually(async () => {
        const refused = broker.pop(topic, 3, {
          accept: async (records) => {
            offered.push(records.map(numberOf));
            throw refusal;
          },
        });
        await expect(refused).rejects.toBe(refusal);
      });
      expect(offered.at(-1)).toEqual([0, 1, 2]);
      expect(await broker.depth(topic)).toBe(5);
      const accepted: number[][] = [];
      const popped = await broker.pop(topic, 10, { accept: async (records) => void accepted.push(records.map(numberOf)) });
      expect(popped.map(numberOf)).toEqual(range(0, 5));
      expect(accepted).toEqual([range(0, 5)]);
      expect(await broker.pop(topic, 10)).toEqual([]);
      expect(await broker.depth(topic)).toBe(0);
    });

    it('accept is offered the due records a pop takes, and not those left behind', async () => {
      const topic = unique('inbound');
      await broker.publish([record(topic, 0), record(topic, 1, { dueAt: Date.now() + 60_000 }), record(topic, 2)]);
      const offered: number[][] = [];
      let popped: ConsumedRecord[] = [];
      await eventually(async () => {
        popped = await broker.pop(topic, 10, { accept: async (records) => void offered.push(records.map(numberOf)) });
        expect(popped.length).toBeGreaterThan(0);
      });
      expect(popped.map(numberOf)).toEqual([0, 2]);
      expect(offered).toEqual([[0, 2]]);
      expect(await broker.depth(topic)).toBe(1); // the record not due yet
      expect(await broker.pop(topic, 10, { accept: async () => void offered.push([-1]) })).toEqual([]);
      expect(offered).toEqual([[0, 2]]); // nothing to pop: accept is not called
    });

    it('concurrent pops with slow accepts never return a record twice, and return only what their accept was offered', async () => {
      const topic = unique('inbound');
      await broker.publish(range(0, 60).map((n) => record(topic, n)));
      await eventually(async () => expect(await broker.depth(topic)).toBe(60));
      const other = (await secondBroker()) ?? broker;
      const got: number[] = [];
      const outside: number[] = [];
      let round = 0;
      await eventually(async () => {
        round++;
        const results = await Promise.all(
          range(0, 8).map(async (i) => {
            const on = i % 2 === 0 ? broker : other;
            if (i === 7) return on.pop(topic, 3); // a pop without accept among them
            let last: number[] = [];
            const popped = await on.pop(topic, 5, {
              accept: async (records) => {
                last = records.map(numberOf);
                await new Promise((resolve) => setTimeout(resolve, 10 + ((i * 7 + round) % 4) * 10));
              },
            });
            outside.push(...popped.map(numberOf).filter((n) => !last.includes(n)));
            return popped;
          }),
        );
        got.push(...results.flat().map(numberOf));
        expect(got.length).toBeGreaterThanOrEqual(60);
      }, 60_000);
      expect(outside).toEqual([]);
      expect(got.sort((x, y) => x - y)).toEqual(range(0, 60));
      expect(await broker.pop(topic, 10)).toEqual([]);
      expect(await other.pop(topic, 10)).toEqual([]);
    });

    it('a pop returns only what it took: records another instance popped while accept ran are not returned', async () => {
      const other = await secondBroker();
      if (other === undefined) return;
      const topic = unique('inbound');
      await broker.publish(range(0, 4).map((n) => record(topic, n)));
      await eventually(async () => expect(await other.depth(topic)).toBe(4));
      const offered = gate();
      const release = gate();
      let seen: number[] = [];
      const slow = broker.pop(topic, 10, {
        accept: async (records) => {
          seen = records.map(numberOf);
          offered.open();
          await release.opened;
        },
      });
      await offered.opened;
      expect(seen).toEqual([0, 1, 2, 3]);
      expect((await popAll(topic, 4, 10, other)).map(numberOf)).toEqual([0, 1, 2, 3]);
      release.open();
      expect(await slow).toEqual([]);
      await broker.publish([record(topic, 4)]);
      expect((await popAll(topic, 1, 10)).map(numberOf)).toEqual([4]);
    });

    it('deleteTopics removes topics with their records and group offsets; it is idempotent and spares other topics', async () => {
      const inbound = unique('inbound');
      const outbound = unique('outbound');
      const kept = unique('inbound');
      const group = unique('g');
      await broker.publish([
        ...range(0, 3).map((n) => record(inbound, n, { id: `i${n}` })),
        ...range(0, 3).map((n) => record(outbound, n)),
        record(kept, 7),
      ]);
      const first = await collect(group, [outbound]);
      await eventually(() => expect(first.seen).toHaveLength(3));
      await first.consumer.stop();
      expect((await popAll(inbound, 1, 1)).map(numberOf)).toEqual([0]);

      await broker.deleteTopics([inbound, outbound]);
      expect(await broker.depth(inbound)).toBe(0);
      expect(await broker.pop(inbound, 10)).toEqual([]);
      expect(await broker.depth(outbound)).toBe(0);
      expect(await broker.depth(outbound, group)).toBe(0);
      await broker.deleteTopics([inbound, outbound, unique('never')]);
      await broker.deleteTopics([]);
      expect((await popAll(kept, 1, 10)).map(numberOf)).toEqual([7]);

      // Published to again, the topics hold only what came after (remembered ids went with them).
      await broker.publish([record(inbound, 10, { id: 'i1' }), record(outbound, 20)]);
      expect((await popAll(inbound, 1, 10)).map(numberOf)).toEqual([10]);
      const again = await collect(group, [outbound]);
      await eventually(() => expect(again.seen.map(numberOf)).toEqual([20]));
    });

    it('a topic deleted through one instance is gone for another, which goes on popping and publishing', async () => {
      const other = await secondBroker();
      if (other === undefined) return;
      const doomed = unique('inbound');
      const alive = unique('inbound');
      await broker.publish([record(doomed, 1), record(doomed, 2), record(alive, 3)]);
      expect((await popAll(doomed, 1, 1, other)).map(numberOf)).toEqual([1]);
      expect((await popAll(alive, 1, 10, other)).map(numberOf)).toEqual([3]);
      await broker.deleteTopics([doomed]);
      await eventually(async () => expect(await other.depth(doomed)).toBe(0));
      expect(await other.pop(doomed, 10)).toEqual([]);
      await other.publish([record(alive, 4)]);
      await broker.publish([record(alive, 5)]);
      expect((await popAll(alive, 2, 10, other)).map(numberOf)).toEqual([4, 5]);
      // Published to again through the other instance, the topic holds only the new record.
      await other.publish([record(doomed, 6)]);
      expect((await popAll(doomed, 1, 10, other)).map(numberOf)).toEqual([6]);
      expect(await broker.depth(doomed)).toBe(0);
    });

    it('a publish holding a record over maxRecordBytes is refused whole with RecordTooLargeError', async () => {
      const topic = unique('inbound');
      const max = broker.maxRecordBytes;
      expect(max).toBe(1024 * 1024);
      const over = await broker.publish([record(topic, 1), { topic, value: 'x'.repeat(max + 1) }]).catch((error: unknown) => error);
      expect(over).toBeInstanceOf(RecordTooLargeError);
      expect(over).toMatchObject({ topic, bytes: max + 1, maxBytes: max });
      // Bytes, not characters: 'é' is two bytes in UTF-8.
      const wide = await broker.publish([{ topic, key: 'k', value: 'é'.repeat(max / 2) }]).catch((error: unknown) => error);
      expect(wide).toBeInstanceOf(RecordTooLargeError);
      expect(wide).toMatchObject({ bytes: max + 1 });
      await broker.publish([record(topic, 2)]);
      expect((await popAll(topic, 1, 10)).map(numberOf)).toEqual([2]);
      expect(await broker.depth(topic)).toBe(0);
    });

    it('a record of exactly maxRecordBytes (key, headers and id counted) is published and consumed whole', async () => {
      const topic = unique('outbound');
      const max = broker.maxRecordBytes;
      const fixed = { key: 'key', headers: { h: 'v' }, id: 'id-1' }; // 3 + 2 + 4 bytes
      const value = 'y'.repeat(max - 9);
      await broker.publish([{ topic, value, ...fixed }, record(topic, 1, { key: 'key' })]);
      const { seen } = await collect(unique('g'), [topic]);
      await eventually(() => expect(seen).toHaveLength(2));
      expect(seen[0]!.value.length).toBe(max - 9);
      expect(seen[0]!.value === value).toBe(true);
      expect(seen[0]).toMatchObject({ key: 'key', headers: { h: 'v' }, id: 'id-1' });
      expect(numberOf(seen[1]!)).toBe(1);
    });

    it('records of a topic whose policy has a retention are gone once older than it, popped or not', async () => {
      const topic = unique('expiring');
      const group = unique('g');
      const publishedAt = Date.now();
      await broker.publish(range(0, 4).map((n) => record(topic, n, { key: `k${n}` })));
      await eventually(async () => expect(await broker.depth(topic)).toBe(4));
      expect(await broker.depth(topic, group)).toBe(4);
      await eventually(async () => {
        expect(await broker.depth(topic)).toBe(0);
        expect(await broker.depth(topic, group)).toBe(0);
        expect(await broker.pop(topic, 10)).toEqual([]);
      });
      expect(Date.now() - publishedAt).toBeGreaterThanOrEqual(SUITE_RETENTION_MS);
      await broker.publish([record(topic, 9)]);
      expect((await popAll(topic, 1, 10)).map(numberOf)).toEqual([9]);
    });

    it('a member alone holds every role of its group, and tells it holds none once stopped', async () => {
      const roles = ['a', 'b', 'c'];
      const told: Array<Set<string>> = [];
      const leases = await broker.leaseRoles({ group: unique('roles'), roles, onChange: (held) => told.push(new Set(held)) });
      await eventually(() => expect(told.at(-1)).toEqual(new Set(roles)), 30_000);
      await leases.stop();
      expect(told.at(-1)).toEqual(new Set());
    });

    it('members of a group hold each role once between them, and a member that stops hands its roles to the others', async () => {
      const group = unique('roles');
      const roles = ['a', 'b', 'c', 'd'];
      const first = { held: new Set<string>() };
      const second = { held: new Set<string>() };
      const on = (await secondBroker()) ?? broker;
      const leasesOfFirst = await broker.leaseRoles({ group, roles, onChange: (held) => (first.held = new Set(held)) });
      await eventually(() => expect(first.held).toEqual(new Set(roles)), 30_000);
      const leasesOfSecond = await on.leaseRoles({ group, roles, onChange: (held) => (second.held = new Set(held)) });
      consumers.push(leasesOfSecond);
      // Every role held, by one member only (once the group settled).
      await eventually(() => {
        expect(new Set([...first.held, ...second.held])).toEqual(new Set(roles));
        expect([...first.held].filter((role) => second.held.has(role))).toEqual([]);
      }, 30_000);
      await leasesOfFirst.stop();
      expect(first.held).toEqual(new Set());
      await eventually(() => expect(second.held).toEqual(new Set(roles)), 30_000);
    });

    it('after close every operation fails with BrokerUnavailableError', async () => {
      const topic = unique('outbound');
      await broker.ping();
      const { consumer } = await collect(unique('g'), [topic]);
      await broker.close();
      await consumer.stop();
      const fails = (operation: Promise<unknown>) => expect(operation).rejects.toBeInstanceOf(BrokerUnavailableError);
      await fails(broker.publish([record(topic, 1)]));
      await fails(broker.pop(topic, 1));
      await fails(broker.depth(topic));
      await fails(broker.ensureTopics([topic]));
      await fails(broker.consume({ groupId: unique('g'), topics: [topic], handler: async () => {} }));
      await fails(broker.ping());
      await fails(broker.deleteTopics([topic]));
      await fails(broker.pop(topic, 1, { accept: async () => {} }));
      await fails(broker.leaseRoles({ group: unique('roles'), roles: ['a'], onChange: () => {} }));
      await broker.close();
    });
  });
}
