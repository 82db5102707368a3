import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { createRequire } from 'node:module';
import { Kafka } from 'kafkajs';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { brokerContract } from '../../../test/contracts/broker.contract.ts';
import type { EventStore } from '../../event-store/port.ts';
import { createSqliteEventStore } from '../../event-store/sqlite/sqlite-event-store.ts';
import { createEventStorePopCursors } from './event-store-pop-cursors.ts';
import { createKafkaBroker } from './kafka-broker.ts';

const brokers = inject('kafkaBrokers');

interface WireRequest {
  request: { apiName: string; encode(): Promise<{ buffer: Buffer }> };
}
interface WireResponse {
  responses: unknown[];
}
const Broker = createRequire(import.meta.url)('kafkajs/src/broker/index.js') as { prototype: object };
const sendRequest = Object.getOwnPropertySymbols(Broker.prototype).find((symbol) => symbol.description === 'private:Broker:sendRequest')!;

if (brokers === '') {
  describe('Broker contract: Kafka', () => it.skip(`skipped: ${inject('kafkaSkipReason')}`));
} else {
  brokerContract('Kafka (kafkajs)', async ({ topicPolicy }) => {
    // Pop claims go to an event store that every instance shares, as Relay processes do.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-kafka-broker-'));
    const stores: EventStore[] = [];
    const open = () => {
      const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), pollIntervalMs: 5 });
      stores.push(store);
      return createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), topicPolicy });
    };
    const broker = open();
    return {
      broker,
      capabilities: { dedupesById: false },
      second: async () => open(),
      teardown: async () => {
        await broker.close();
        for (const store of stores) await store.close();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  });
}

describe.skipIf(brokers === '')('Kafka adapter: what the contract leaves to it', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-kafka-dedupe-'));
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db') });
  // As Relay's policy says: an app's inbound queue is one ordered partition.
  const topicPolicy = (topic: string) => ({ partitions: topic.startsWith('inbound.') ? 1 : 3 });
  const broker = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), topicPolicy });
  afterAll(async () => {
    await broker.close();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a second copy of a popped record (the publisher re-sent it) is skipped, not handed out again', async () => {
    const topic = `inbound.${randomUUID().slice(0, 8)}`;
    const record = (n: number, id: string) => ({ topic, key: 'k', value: JSON.stringify({ n }), id });
    await broker.publish([record(1, 'a'), record(2, 'b')]);
    expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['a', 'b']);
    await broker.publish([record(1, 'a'), record(3, 'c'), record(2, 'b')]);
    const got: string[] = [];
    const deadline = Date.now() + 10_000;
    // A tight loop of pops: each empty pop must still let the tail's fetches in (no starvation).
    while (got.length < 1 && Date.now() < deadline) got.push(...(await broker.pop(topic, 10)).map((r) => r.id!));
    expect(got).toEqual(['c']);
    expect(await broker.pop(topic, 10)).toEqual([]);
    expect(await broker.depth(topic)).toBe(0);
    const { events } = await store.readStream(`popcursor-${topic}`);
    expect(events.map((e) => e.data)).toEqual([
      { topic, partitions: [{ partition: 0, popped: ['0', '1'], skipped: [] }], ids: ['a', 'b'] },
      { topic, partitions: [{ partition: 0, popped: ['3'], skipped: ['2', '4'] }], ids: ['c'] },
    ]);
  });

  it('an idle broker does not wake up every millisecond: kafkajs request queues schedule a check only when a request is pending (request-queue-fix.ts)', async () => {
    // Connections open (producer, admin, the inbox tail), then idle.
    const topic = `inbound.${randomUUID().slice(0, 8)}`;
    await broker.publish([{ topic, key: 'k', value: '{}' }]);
    expect(await broker.pop(topic, 10)).toHaveLength(1);
    await broker.ping();
    const timers = vi.spyOn(globalThis, 'setTimeout');
    try {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      // Before the fix: about a thousand a second per connection. Now: the tail's fetches, the probe, heartbeats.
      expect(timers.mock.calls.length).toBeLessThan(200);
    } finally {
      timers.mockRestore();
    }
  });

  it('the reachability probe asks for one topic, not for every topic: on the wire its Metadata request names one, which the broker says it does not know (issue 49)', async () => {
    // Topics enough that a request for every topic would be answered with several.
    await broker.publish([0, 1].map(() => ({ topic: `inbound.${randomUUID().slice(0, 8)}`, key: 'k', value: '{}' })));
    const asked: Array<{ named: number; answer: unknown }> = [];
    const prototype = Broker.prototype as Record<symbol, (this: { connectionPool: { clientId: string } }, request: WireRequest) => Promise<WireResponse>>;
    const original = prototype[sendRequest]!;
    prototype[sendRequest] = async function (this: { connectionPool: { clientId: string } }, request: WireRequest) {
      const probing = request.request.apiName === 'Metadata' && this.connectionPool.clientId === 'relay-probe';
      const named = probing ? (await request.request.encode()).buffer.readInt32BE(0) : 0;
      try {
        const response = await original.call(this, request);
        if (probing) asked.push({ named, answer: response });
        return response;
      } catch (error) {
        // kafkajs throws on the broker's answer for a topic it does not know.
        if (probing) asked.push({ named, answer: (error as { type?: unknown }).type });
        throw error;
      }
    };
    try {
      await broker.ping();
      expect(asked.length).toBeGreaterThan(0);
      for (const request of asked) expect(request).toEqual({ named: 1, answer: 'UNKNOWN_TOPIC_OR_PARTITION' });
      expect(broker.isReady()).toBe(true);
    } finally {
      prototype[sendRequest] = original;
    }
  });

  it('the probe rests while nobody asks whether the broker is reachable, and asks Kafka again at once when someone does', async () => {
    const clientId = `resting-${randomUUID().slice(0, 8)}`;
    const resting = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), clientId, probeIntervalMs: 50, probeWhileAskedMs: 300 });
    const probes: number[] = [];
    const prototype = Broker.prototype as Record<symbol, (this: { connectionPool: { clientId: string } }, request: WireRequest) => Promise<WireResponse>>;
    const original = prototype[sendRequest]!;
    prototype[sendRequest] = async function (this: { connectionPool: { clientId: string } }, request: WireRequest) {
      if (request.request.apiName === 'Metadata' && this.connectionPool.clientId === `${clientId}-probe`) probes.push(Date.now());
      return original.call(this, request);
    };
    try {
      await vi.waitFor(() => expect(resting.isReady()).toBe(true), { timeout: 10_000, interval: 20 });
      // Asked just now: probed every 50 ms for 300 ms, then at rest.
      await vi.waitFor(() => expect(probes.length).toBeGreaterThanOrEqual(3), { timeout: 5_000, interval: 20 });
      await new Promise((resolve) => setTimeout(resolve, 600));
      const before = probes.length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(probes.length).toBe(before);
      // Asked again: the last answer, and a probe at once.
      expect(resting.isReady()).toBe(true);
      await vi.waitFor(() => expect(probes.length).toBeGreaterThan(before), { timeout: 1_000, interval: 10 });
    } finally {
      prototype[sendRequest] = original;
      await resting.close();
    }
  });

  it('an idle inbox tail fetches with a session: on the wire each fetch names no partition and is answered with none; a record that comes is still handed out (fetch-session.ts)', async () => {
    const followed = Array.from({ length: 3 }, () => `inbound.${randomUUID().slice(0, 8)}`);
    await broker.publish(followed.map((topic) => ({ topic, key: 'k', value: '{}' })));
    for (const topic of followed) expect(await broker.pop(topic, 10)).toHaveLength(1);
    // Fetch v11's bytes: replica_id, max_wait_time, min_bytes, max_bytes (4 each), isolation_level (1),
    // session_id, session_epoch, then the count of topics named (4 each).
    const fetches: Array<{ sessionId: number; epoch: number; named: number; answered: number }> = [];
    const prototype = Broker.prototype as Record<symbol, (this: { connectionPool: { clientId: string } }, request: WireRequest) => Promise<WireResponse>>;
    const original = prototype[sendRequest]!;
    prototype[sendRequest] = async function (this: { connectionPool: { clientId: string } }, request: WireRequest) {
      const response = await original.call(this, request);
      if (request.request.apiName === 'Fetch' && this.connectionPool.clientId.startsWith('relay-tail-')) {
        const bytes = (await request.request.encode()).buffer;
        fetches.push({ sessionId: bytes.readInt32BE(17), epoch: bytes.readInt32BE(21), named: bytes.readInt32BE(25), answered: response.responses.length });
      }
      return response;
    };
    try {
      // The first fetches after the last follow's restart name the partitions it moved to (seeks).
      await vi.waitFor(
        () => {
          const last = fetches.slice(-2);
          expect(last).toHaveLength(2);
          for (const fetch of last) {
            expect(fetch.sessionId).not.toBe(0);
            expect(fetch.epoch).toBeGreaterThan(0);
            expect(fetch.named).toBe(0);
            expect(fetch.answered).toBe(0);
          }
        },
        { timeout: 15_000, interval: 50 },
      );
      await broker.publish([{ topic: followed[1]!, key: 'k', value: '{"n":2}' }]);
      await vi.waitFor(async () => expect((await broker.pop(followed[1]!, 10)).map((r) => r.value)).toEqual(['{"n":2}']), { timeout: 10_000, interval: 20 });
    } finally {
      prototype[sendRequest] = original;
    }
  });

  it('follow has the tail follow many topics with one leader lookup and no consumer; a topic that does not exist is passed by; then knownEmpty knows each and a pop hands out what waits', async () => {
    const many = Array.from({ length: 6 }, () => `inbound.${randomUUID().slice(0, 8)}`);
    const missing = `inbound.${randomUUID().slice(0, 8)}`;
    await broker.publish(many.map((topic, i) => ({ topic, key: 'k', value: JSON.stringify({ i }) })));
    await broker.pop(many[0]!, 10); // popped already: the tail starts that topic after it
    const consumers = vi.spyOn(Kafka.prototype, 'consumer');
    const lookups: number[] = [];
    const prototype = Broker.prototype as Record<symbol, (this: { connectionPool: { clientId: string } }, request: WireRequest) => Promise<WireResponse>>;
    const original = prototype[sendRequest]!;
    prototype[sendRequest] = async function (this: { connectionPool: { clientId: string } }, request: WireRequest) {
      if (request.request.apiName === 'Metadata' && this.connectionPool.clientId.startsWith('relay-tail-')) lookups.push((await request.request.encode()).buffer.readInt32BE(0));
      return original.call(this, request);
    };
    try {
      await broker.follow!([...many, missing]);
      // One Metadata request naming the five not followed yet (the first was, by its pop; the missing one is passed by).
      expect(lookups).toEqual([5]);
      await broker.follow!(many);
      expect(lookups).toHaveLength(1);
      expect(consumers).not.toHaveBeenCalled();
    } finally {
      prototype[sendRequest] = original;
      consumers.mockRestore();
    }
    expect(many.map((topic) => broker.knownEmpty!(topic))).toEqual([true, false, false, false, false, false]);
    for (const [i, topic] of many.entries()) expect((await broker.pop(topic, 10)).map((r) => r.value)).toEqual(i === 0 ? [] : [JSON.stringify({ i })]);
    expect(many.map((topic) => broker.knownEmpty!(topic))).toEqual(many.map(() => true));
  });

  it('watchArrivals tells the port name of a followed topic once the tail has records another process published to it (a pop then hands them out), and nothing once the listener stopped', async () => {
    const topic = `inbound.${randomUUID().slice(0, 8)}`;
    const other = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), topicPolicy });
    const told: string[] = [];
    const unwatch = broker.watchArrivals!((arrived) => told.push(arrived));
    try {
      await other.publish([{ topic, key: 'k', value: '{"n":1}', id: 'one' }]);
      await broker.follow!([topic]);
      await vi.waitFor(() => expect(told).toEqual([topic]), { timeout: 10_000, interval: 5 });
      expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['one']);
      expect(broker.knownEmpty!(topic)).toBe(true);
      await other.publish([{ topic, key: 'k', value: '{"n":2}', id: 'two' }]);
      await vi.waitFor(() => expect(told).toEqual([topic, topic]), { timeout: 10_000, interval: 5 });
      expect(broker.knownEmpty!(topic)).toBe(false);
      expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['two']);
      unwatch();
      await other.publish([{ topic, key: 'k', value: '{"n":3}', id: 'three' }]);
      await vi.waitFor(() => expect(broker.knownEmpty!(topic)).toBe(false), { timeout: 10_000, interval: 5 });
      expect(told).toEqual([topic, topic]);
    } finally {
      unwatch();
      await other.close();
    }
  });

  it('knownEmptyAll says all are empty as knownEmpty would for each, and keeps saying it only while nothing reaches the tail and no record left for later falls due', async () => {
    const [a, b] = [`inbound.${randomUUID().slice(0, 8)}`, `inbound.${randomUUID().slice(0, 8)}`];
    const both = [a, b];
    const other = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), topicPolicy });
    try {
      await other.publish([{ topic: a, key: 'k', value: '{}', id: 'a1' }, { topic: b, key: 'k', value: '{}', id: 'b1' }]);
      await broker.follow!(both);
      expect(broker.knownEmptyAll!(both)).toBe(false);
      for (const topic of both) expect(await broker.pop(topic, 10)).toHaveLength(1);
      expect([broker.knownEmptyAll!(both), broker.knownEmptyAll!(both)]).toEqual([true, true]);
      // Another process's record: not all empty once the tail has it, though this list's answer was remembered.
      await other.publish([{ topic: b, key: 'k', value: '{}', id: 'b2' }]);
      await vi.waitFor(() => expect(broker.knownEmptyAll!(both)).toBe(false), { timeout: 10_000, interval: 5 });
      expect(broker.knownEmpty!(b)).toBe(false);
      expect((await broker.pop(b, 10)).map((r) => r.id)).toEqual(['b2']);
      expect(broker.knownEmptyAll!(both)).toBe(true);
      // A record due in a moment: all empty until it falls due, then not, with nothing else arriving.
      const dueAt = Date.now() + 1_500;
      await other.publish([{ topic: a, key: 'k', value: '{}', id: 'a2', dueAt }]);
      expect(broker.knownEmptyAll!(both)).toBe(true);
      await vi.waitFor(() => expect(broker.knownEmptyAll!(both)).toBe(false), { timeout: 10_000, interval: 5 });
      expect(Date.now()).toBeGreaterThanOrEqual(dueAt);
      expect((await broker.pop(a, 10)).map((r) => r.id)).toEqual(['a2']);
      expect(broker.knownEmptyAll!(both)).toBe(true);
    } finally {
      await other.close();
    }
  });

  it('knownEmpty says empty only when a pop would find nothing: a topic that does not exist is; not before the topic is followed, not while a record is due, nor while a second copy waits to be skipped; a record due later does not count until it is due', async () => {
    const topic = `inbound.${randomUUID().slice(0, 8)}`;
    const record = (n: number, id: string, dueAt?: number) => ({ topic, key: 'k', value: JSON.stringify({ n }), id, ...(dueAt === undefined ? {} : { dueAt }) });
    // A topic no record was ever published to: empty once a pop's listing (at most 200 ms old) did not name it.
    const never = `inbound.${randomUUID().slice(0, 8)}`;
    await vi.waitFor(
      async () => {
        expect(await broker.pop(never, 10)).toEqual([]);
        expect(broker.knownEmpty!(never)).toBe(true);
      },
      { timeout: 10_000, interval: 50 },
    );
    await broker.publish([record(1, 'a')]);
    // Unknown until this process follows the topic (its first pop).
    expect(broker.knownEmpty!(topic)).toBe(false);
    expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['a']);
    expect(broker.knownEmpty!(topic)).toBe(true);
    // A new record: not empty once the tail has it, and empty again once it is popped.
    await broker.publish([record(2, 'b')]);
    await vi.waitFor(() => expect(broker.knownEmpty!(topic)).toBe(false), { timeout: 10_000, interval: 5 });
    expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['b']);
    expect(broker.knownEmpty!(topic)).toBe(true);
    // A second copy of a popped record: a pop has to skip it (claim it), so the topic is not empty yet.
    await broker.publish([record(1, 'a')]);
    await vi.waitFor(() => expect(broker.knownEmpty!(topic)).toBe(false), { timeout: 10_000, interval: 5 });
    expect(await broker.pop(topic, 10)).toEqual([]);
    expect(broker.knownEmpty!(topic)).toBe(true);
    // A record due in a moment, published in one batch with one due now (so the tail has both once
    // it has the second): once that one is popped the topic is empty until the first falls due.
    const dueAt = Date.now() + 3_000;
    await broker.publish([record(3, 'c', dueAt), record(4, 'd')]);
    await vi.waitFor(() => expect(broker.knownEmpty!(topic)).toBe(false), { timeout: 10_000, interval: 5 });
    expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['d']);
    if (Date.now() < dueAt) expect(broker.knownEmpty!(topic)).toBe(true);
    await vi.waitFor(() => expect(broker.knownEmpty!(topic)).toBe(false), { timeout: dueAt + 5_000 - Date.now(), interval: 5 });
    expect(Date.now()).toBeGreaterThanOrEqual(dueAt);
    expect((await broker.pop(topic, 10)).map((r) => r.id)).toEqual(['c']);
    expect(broker.knownEmpty!(topic)).toBe(true);
  });
});
