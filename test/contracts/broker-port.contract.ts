import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { BrokerUnavailableError, type Broker, type ConsumedRecord, type Consumer, type OutgoingRecord } from '../../infra/broker/port.ts';

export interface BrokerFixture {
  broker: Broker;
  capabilities: { dedupesById: boolean };
  /** Another instance (connection, process) on the same backing broker. */
  second?: () => Promise<Broker>;
  teardown: () => Promise<void>;
}

const waitUntil = async (check: () => boolean, timeoutMs = 20_000, what = 'condition') => {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

const record = (topic: string, i: number, extra: Partial<OutgoingRecord> = {}): OutgoingRecord => ({
  topic,
  key: 'k',
  value: JSON.stringify({ i }),
  headers: { n: String(i) },
  ...extra,
});
const indexOf = (r: ConsumedRecord) => (JSON.parse(r.value) as { i: number }).i;

/**
 * What every Broker adapter must do (the embedded log now, Kafka next). Topic and group names are
 * unique per test so that a shared real broker can run it.
 */
export function brokerContract(name: string, factory: () => Promise<BrokerFixture>) {
  describe(`Broker contract: ${name}`, () => {
    let fixture: BrokerFixture;
    let broker: Broker;
    const consumers: Consumer[] = [];
    const unique = (prefix: string) => `${prefix}.${randomUUID().slice(0, 8)}`;
    const consume = async (groupId: string, topics: string[], handler: (records: ConsumedRecord[]) => Promise<void>) => {
      const consumer = await broker.consume({ groupId, topics, handler });
      consumers.push(consumer);
      return consumer;
    };

    beforeEach(async () => {
      fixture = await factory();
      broker = fixture.broker;
    });
    afterEach(async () => {
      for (const consumer of consumers.splice(0)) await consumer.stop();
      await fixture.teardown();
    });

    it('hands published records to a consumer in order, with their fields', async () => {
      const topic = unique('outbound');
      await broker.ensureTopics([topic]);
      const got: ConsumedRecord[] = [];
      await consume(unique('g'), [topic], async (records) => void got.push(...records));
      await broker.publish(Array.from({ length: 20 }, (_, i) => record(topic, i, { id: `m${i}` })));
      await waitUntil(() => got.length === 20, 20_000, '20 records');
      expect(got.map(indexOf)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(got[3]).toMatchObject({ topic, key: 'k', headers: { n: '3' }, id: 'm3', dueAt: undefined });
      expect(typeof got[3]!.offset).toBe('bigint');
      expect(got[3]!.timestamp).toBeGreaterThan(Date.now() - 60_000);
    });

    it('a consumer of the same group resumes after the last committed record', async () => {
      const topic = unique('outbound');
      const group = unique('g');
      await broker.ensureTopics([topic]);
      await broker.publish(Array.from({ length: 5 }, (_, i) => record(topic, i)));
      const first: number[] = [];
      const c1 = await consume(group, [topic], async (records) => void first.push(...records.map(indexOf)));
      await waitUntil(() => first.length === 5);
      await c1.stop();
      await broker.publish(Array.from({ length: 3 }, (_, i) => record(topic, 5 + i)));
      const second: number[] = [];
      await consume(group, [topic], async (records) => void second.push(...records.map(indexOf)));
      await waitUntil(() => second.length === 3);
      await new Promise((r) => setTimeout(r, 200));
      expect(second).toEqual([5, 6, 7]);
    });

    it('every group gets every record', async () => {
      const topic = unique('outbound');
      await broker.ensureTopics([topic]);
      const a: number[] = [];
      const b: number[] = [];
      await consume(unique('ga'), [topic], async (records) => void a.push(...records.map(indexOf)));
      await consume(unique('gb'), [topic], async (records) => void b.push(...records.map(indexOf)));
      await broker.publish([record(topic, 1), record(topic, 2)]);
      await waitUntil(() => a.length === 2 && b.length === 2);
      expect(a).toEqual([1, 2]);
      expect(b).toEqual([1, 2]);
    });

    it('a handler that throws gets the same records again; nothing is skipped', async () => {
      const topic = unique('outbound');
      await broker.ensureTopics([topic]);
      let failures = 0;
      const got: number[] = [];
      await consume(unique('g'), [topic], async (records) => {
        if (failures < 2) {
          failures++;
          throw new Error('handler down');
        }
        got.push(...records.map(indexOf));
      });
      await broker.publish([record(topic, 1), record(topic, 2), record(topic, 3)]);
      await waitUntil(() => got.length >= 3);
      expect(failures).toBe(2);
      expect(got).toEqual([1, 2, 3]);
    });

    it('a record is not handed before its due time, and does not hold up another topic', async () => {
      const retry = unique('retry');
      const first = unique('outbound');
      await broker.ensureTopics([retry, first]);
      const seen: Array<{ topic: string; at: number }> = [];
      await consume(unique('g'), [retry, first], async (records) => void seen.push(...records.map((r) => ({ topic: r.topic, at: Date.now() }))));
      const dueAt = Date.now() + 1500;
      await broker.publish([record(retry, 1, { dueAt })]);
      await broker.publish([record(first, 2)]);
      await waitUntil(() => seen.some((s) => s.topic === first), 10_000, 'the due record of the other topic');
      expect(seen.find((s) => s.topic === retry)).toBeUndefined();
      await waitUntil(() => seen.some((s) => s.topic === retry), 10_000, 'the delayed record');
      expect(seen.find((s) => s.topic === retry)!.at).toBeGreaterThanOrEqual(dueAt - 5);
    });

    it('pop is destructive and ordered; an unknown topic pops nothing', async () => {
      const topic = unique('inbound');
      await broker.ensureTopics([topic]);
      await broker.publish(Array.from({ length: 5 }, (_, i) => record(topic, i)));
      let popped: ConsumedRecord[] = [];
      for (let tries = 0; tries < 100 && popped.length === 0; tries++) {
        popped = await broker.pop(topic, 3);
        if (popped.length === 0) await new Promise((r) => setTimeout(r, 20));
      }
      expect(popped.map(indexOf)).toEqual([0, 1, 2]);
      expect((await broker.pop(topic, 10)).map(indexOf)).toEqual([3, 4]);
      expect(await broker.pop(topic, 10)).toEqual([]);
      expect(await broker.pop(unique('never'), 10)).toEqual([]);
    });

    it('concurrent pops, also through a second instance, return each record exactly once', async () => {
      const topic = unique('inbound');
      await broker.ensureTopics([topic]);
      await broker.publish(Array.from({ length: 200 }, (_, i) => record(topic, i, { id: `id-${i}` })));
      const other = fixture.second ? await fixture.second() : broker;
      try {
        const all: number[] = [];
        for (let round = 0; round < 50 && all.length < 200; round++) {
          const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? broker : other).pop(topic, 7)));
          for (const r of results) all.push(...r.map(indexOf));
        }
        expect(all).toHaveLength(200);
        expect(new Set(all).size).toBe(200);
      } finally {
        if (other !== broker) await other.close();
      }
    });

    it('depth counts what is left to pop, or what a group has not consumed', async () => {
      const topic = unique('inbound');
      await broker.publish(Array.from({ length: 4 }, (_, i) => record(topic, i)));
      expect(await broker.depth(topic)).toBe(4);
      await broker.pop(topic, 1);
      expect(await broker.depth(topic)).toBe(3);
      const group = unique('g');
      const got: number[] = [];
      const consumer = await consume(group, [topic], async (records) => void got.push(...records.map(indexOf)));
      await waitUntil(() => got.length === 3);
      await consumer.stop();
      expect(await broker.depth(topic, group)).toBe(0);
    });

    it('records with the same id on a topic are published once (when the adapter de-duplicates)', async () => {
      if (!fixture.capabilities.dedupesById) return;
      const topic = unique('inbound');
      await broker.publish([record(topic, 1, { id: 'same' }), record(topic, 2, { id: 'same' })]);
      expect((await broker.pop(topic, 10)).map(indexOf)).toEqual([1]);
      await broker.publish([record(topic, 3, { id: 'same' })]);
      expect(await broker.pop(topic, 10)).toEqual([]);
      await broker.publish([record(unique('other'), 4, { id: 'same' })]);
    });

    it('ensureTopics is idempotent', async () => {
      const topic = unique('inbound');
      await broker.ensureTopics([topic]);
      await broker.ensureTopics([topic, topic]);
      expect(await broker.depth(topic)).toBe(0);
    });

    it('after close every operation fails with BrokerUnavailableError', async () => {
      await broker.ping();
      await broker.close();
      await expect(broker.publish([record('x', 1)])).rejects.toBeInstanceOf(BrokerUnavailableError);
      await expect(broker.pop('x', 1)).rejects.toBeInstanceOf(BrokerUnavailableError);
      await expect(broker.ping()).rejects.toBeInstanceOf(BrokerUnavailableError);
      await broker.close();
    });
  });
}
