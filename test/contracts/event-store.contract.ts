import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type EventStore,
  type ExpectedVersion,
  type NewEvent,
  type RecordedEvent,
  type Subscription,
} from '../../infra/event-store/port.ts';

/**
 * What an adapter's spec hands to the contract for each test.
 * - `store` must be EMPTY (fresh file, schema, database or namespace).
 * - `teardown` closes the store (idempotent `close`) and releases the backing storage.
 * - `second`, when given, opens another instance on the SAME backing store, as another process
 *   would (a second connection, not a second handle on the same object). The suite closes it.
 */
export interface EventStoreFixture {
  readonly store: EventStore;
  readonly teardown: () => Promise<void>;
  readonly second?: () => Promise<EventStore>;
}

const event = (type: string, data: unknown, metadata?: NewEvent['metadata']): NewEvent =>
  metadata === undefined ? { type, data } : { type, data, metadata };
const numbered = (...ns: number[]): NewEvent[] => ns.map((n) => event('Numbered', { n }));
const dataOf = (events: readonly RecordedEvent[]): unknown[] => events.map((e) => e.data);
const positionsOf = (events: readonly RecordedEvent[]): bigint[] => events.map((e) => e.globalPosition);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const expectStrictlyIncreasing = (positions: readonly bigint[]): void => {
  for (let i = 1; i < positions.length; i++) expect(positions[i]! > positions[i - 1]!).toBe(true);
};

const expectConflict = async (promise: Promise<unknown>, stream: string, expected: ExpectedVersion, actual: bigint) => {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(ExpectedVersionConflictError);
  expect(error).toMatchObject({ name: 'ExpectedVersionConflictError', streamName: stream, expected, actual });
};

/** Collects what a subscription delivers, and fails the test if the handler is ever re-entered. */
const collector = () => {
  const batches: RecordedEvent[][] = [];
  let busy = false;
  return {
    batches,
    get events() {
      return batches.flat();
    },
    handler: async (events: RecordedEvent[], delayMs = 0) => {
      if (busy) throw new Error('handler re-entered while a call was in flight');
      busy = true;
      if (delayMs > 0) await sleep(delayMs);
      batches.push(events);
      busy = false;
    },
  };
};

export function eventStoreContract(name: string, factory: () => Promise<EventStoreFixture>): void {
  describe(`EventStore contract: ${name}`, () => {
    let fixture: EventStoreFixture;
    let store: EventStore;
    let seconds: EventStore[];
    let subscriptions: Subscription[];

    const subscribe = (options: Parameters<EventStore['subscribe']>[0], on: EventStore = store): Subscription => {
      const subscription = on.subscribe(options);
      subscriptions.push(subscription);
      return subscription;
    };

    beforeEach(async () => {
      fixture = await factory();
      store = fixture.store;
      seconds = [];
      subscriptions = [];
    });

    afterEach(async () => {
      await Promise.all(subscriptions.map((s) => s.stop()));
      await Promise.all(seconds.map((s) => s.close()));
      await fixture.teardown();
    });

    describe('streams', () => {
      it('reads an unknown stream as version 0n with no events', async () => {
        expect(await store.readStream('order-unknown')).toEqual({ version: 0n, events: [] });
        expect(await store.headPosition()).toBe(0n);
      });

      it('appends events with versions 1..n and reads them back', async () => {
        const before = Date.now();
        const result = await store.appendToStream('order-1', [
          event('OrderPlaced', { total: 12 }),
          event('OrderPaid', { by: 'card' }),
          event('OrderShipped', { to: ['x', 'y'] }),
        ]);
        const after = Date.now();
        const { version, events } = await store.readStream('order-1');
        expect(version).toBe(3n);
        expect(result.nextVersion).toBe(3n);
        expect(result.lastPosition).toBe(events[2]!.globalPosition);
        expect(events.map((e) => [e.type, e.streamName, e.streamVersion])).toEqual([
          ['OrderPlaced', 'order-1', 1n],
          ['OrderPaid', 'order-1', 2n],
          ['OrderShipped', 'order-1', 3n],
        ]);
        expect(dataOf(events)).toEqual([{ total: 12 }, { by: 'card' }, { to: ['x', 'y'] }]);
        expect(events.map((e) => e.metadata)).toEqual([{}, {}, {}]);
        expect(events[0]!.globalPosition).toBe(1n);
        expectStrictlyIncreasing(positionsOf(events));
        for (const e of events) {
          expect(e.id).toMatch(uuid);
          expect(e.recordedAt).toBeInstanceOf(Date);
          expect(e.recordedAt.getTime()).toBeGreaterThanOrEqual(before);
          expect(e.recordedAt.getTime()).toBeLessThanOrEqual(after);
          expect(typeof e.streamVersion).toBe('bigint');
          expect(typeof e.globalPosition).toBe('bigint');
        }
        expect(new Set(events.map((e) => e.id)).size).toBe(3);
      });

      it('continues the versions on a later append', async () => {
        await store.appendToStream('order-1', numbered(1, 2));
        const result = await store.appendToStream('order-1', numbered(3));
        expect(result.nextVersion).toBe(3n);
        const { version, events } = await store.readStream('order-1');
        expect(version).toBe(3n);
        expect(events.map((e) => e.streamVersion)).toEqual([1n, 2n, 3n]);
        expect(dataOf(events)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
      });

      it('preserves given event ids and metadata, and JSON data of every shape', async () => {
        const id = '0b7f5a0e-3f0e-4c59-9d8e-5c1d2b7a9f10';
        const metadata = { actor: 'user:7', correlationId: 'c-1', causationId: 'k-2', extra: { deep: [1, 'two', null] } };
        const shapes = ['text', 42, -1.5, true, null, ['a', 1], { nested: { emoji: 'héllo 👋', empty: {} } }];
        await store.appendToStream('order-1', [{ id, type: 'WithId', data: { a: 1 }, metadata }]);
        await store.appendToStream('order-2', shapes.map((data) => event('Shape', data)));
        const [withId] = (await store.readStream('order-1')).events;
        expect(withId).toMatchObject({ id, type: 'WithId', data: { a: 1 }, metadata });
        expect(dataOf((await store.readStream('order-2')).events)).toEqual(shapes);
      });

      it('records the commit time, or the time an imported event carries (ms precision)', async () => {
        const before = Date.now();
        await store.appendToStream('order-3', numbered(1));
        const after = Date.now();
        const imported = new Date('2024-02-29T23:59:58.123Z');
        await store.appendToStream('order-3', [{ ...event('Imported', { n: 2 }), recordedAt: imported }, event('Fresh', { n: 3 })]);
        const [first, second, third] = (await store.readStream('order-3')).events;
        // PostgreSQL's now() is the transaction start: allow the clock's millisecond rounding.
        expect(first!.recordedAt.getTime()).toBeGreaterThanOrEqual(before - 1);
        expect(first!.recordedAt.getTime()).toBeLessThanOrEqual(after + 1);
        expect(second!.recordedAt.toISOString()).toBe('2024-02-29T23:59:58.123Z');
        expect(third!.recordedAt.getTime()).toBeGreaterThanOrEqual(before - 1);
        const [readBack] = await store.readAll({ filter: { until: new Date('2024-03-01T00:00:00.000Z') } });
        expect(readBack).toMatchObject({ type: 'Imported', streamName: 'order-3', streamVersion: 2n });
        await expect(store.appendToStream('order-3', [{ ...event('Bad', {}), recordedAt: new Date(Number.NaN) }])).rejects.toBeInstanceOf(RangeError);
        expect((await store.readStream('order-3')).version).toBe(3n);
      });

      it('keeps streams apart', async () => {
        await store.appendToStream('order-1', numbered(1));
        await store.appendToStream('order-2', numbered(2, 3));
        expect(dataOf((await store.readStream('order-1')).events)).toEqual([{ n: 1 }]);
        expect((await store.readStream('order-2')).events.map((e) => e.streamVersion)).toEqual([1n, 2n]);
      });
    });

    describe('expected version', () => {
      it('no_stream and 0n accept only a new stream', async () => {
        expect((await store.appendToStream('a-1', numbered(1), { expectedVersion: 'no_stream' })).nextVersion).toBe(1n);
        expect((await store.appendToStream('a-2', numbered(1), { expectedVersion: 0n })).nextVersion).toBe(1n);
        await expectConflict(store.appendToStream('a-1', numbered(2), { expectedVersion: 'no_stream' }), 'a-1', 'no_stream', 1n);
        await expectConflict(store.appendToStream('a-2', numbered(2), { expectedVersion: 0n }), 'a-2', 0n, 1n);
      });

      it('stream_exists accepts only an existing stream', async () => {
        await expectConflict(
          store.appendToStream('a-1', numbered(1), { expectedVersion: 'stream_exists' }),
          'a-1',
          'stream_exists',
          0n,
        );
        await store.appendToStream('a-1', numbered(1));
        expect((await store.appendToStream('a-1', numbered(2), { expectedVersion: 'stream_exists' })).nextVersion).toBe(2n);
      });

      it('an exact version must match the current version', async () => {
        await store.appendToStream('a-1', numbered(1, 2));
        await expectConflict(store.appendToStream('a-1', numbered(3), { expectedVersion: 1n }), 'a-1', 1n, 2n);
        await expectConflict(store.appendToStream('a-1', numbered(3), { expectedVersion: 3n }), 'a-1', 3n, 2n);
        await expectConflict(store.appendToStream('a-9', numbered(1), { expectedVersion: 1n }), 'a-9', 1n, 0n);
        expect((await store.appendToStream('a-1', numbered(3), { expectedVersion: 2n })).nextVersion).toBe(3n);
      });

      it('any (also the default) skips the check', async () => {
        expect((await store.appendToStream('a-1', numbered(1), { expectedVersion: 'any' })).nextVersion).toBe(1n);
        expect((await store.appendToStream('a-1', numbered(2), { expectedVersion: 'any' })).nextVersion).toBe(2n);
        expect((await store.appendToStream('a-1', numbered(3))).nextVersion).toBe(3n);
      });

      it('a conflicting append writes nothing, not even part of its events', async () => {
        await store.appendToStream('a-1', numbered(1));
        await expectConflict(store.appendToStream('a-1', numbered(2, 3), { expectedVersion: 0n }), 'a-1', 0n, 1n);
        expect(dataOf((await store.readStream('a-1')).events)).toEqual([{ n: 1 }]);
        expect((await store.readAll()).length).toBe(1);
      });

      it('of concurrent appends with the same expected version, exactly one wins', async () => {
        await store.appendToStream('a-1', numbered(0));
        const attempts = [1, 2, 3, 4, 5].map((n) => store.appendToStream('a-1', numbered(n), { expectedVersion: 1n }));
        const settled = await Promise.allSettled(attempts);
        const won = settled.flatMap((s, i) => (s.status === 'fulfilled' ? [i + 1] : []));
        expect(won.length).toBe(1);
        for (const s of settled) {
          if (s.status === 'rejected') {
            expect(s.reason).toBeInstanceOf(ExpectedVersionConflictError);
            expect(s.reason).toMatchObject({ expected: 1n, actual: 2n });
          }
        }
        const { version, events } = await store.readStream('a-1');
        expect(version).toBe(2n);
        expect(dataOf(events)).toEqual([{ n: 0 }, { n: won[0] }]);
      });

      it('appending no events checks the version and returns the stream unchanged', async () => {
        expect(await store.appendToStream('a-1', [])).toEqual({ nextVersion: 0n, lastPosition: 0n });
        const { lastPosition } = await store.appendToStream('a-1', numbered(1, 2));
        await store.appendToStream('b-1', numbered(3));
        expect(await store.appendToStream('a-1', [], { expectedVersion: 2n })).toEqual({ nextVersion: 2n, lastPosition });
        await expectConflict(store.appendToStream('a-1', [], { expectedVersion: 'no_stream' }), 'a-1', 'no_stream', 2n);
        expect((await store.readAll()).length).toBe(3);
      });
    });

    describe('global log', () => {
      const seed = async () => {
        const positions: bigint[] = [];
        for (const [stream, type, n] of [
          ['order-1', 'OrderPlaced', 1],
          ['user-1', 'UserCreated', 2],
          ['order-2', 'OrderPlaced', 3],
          ['order-1', 'OrderPaid', 4],
          ['credential-1', 'CredentialIssued', 5],
        ] as const) {
          positions.push((await store.appendToStream(stream, [event(type, { n })])).lastPosition);
        }
        return positions;
      };

      it('orders every event by strictly increasing global position across streams', async () => {
        const positions = await seed();
        const all = await store.readAll();
        expect(dataOf(all)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }]);
        expect(positionsOf(all)).toEqual(positions);
        expect(positions[0]).toBe(1n);
        expectStrictlyIncreasing(positions);
        expect(await store.headPosition()).toBe(positions[4]);
      });

      it('reads after a position, up to a limit (default 1000)', async () => {
        const positions = await seed();
        expect(dataOf(await store.readAll({ after: positions[1]!, limit: 2 }))).toEqual([{ n: 3 }, { n: 4 }]);
        expect(dataOf(await store.readAll({ after: positions[4]! }))).toEqual([]);
        expect(await store.readAll({ limit: 0 })).toEqual([]);
        await store.appendToStream('bulk-1', Array.from({ length: 1000 }, (_, i) => event('Bulk', { i })));
        const page = await store.readAll();
        expect(page.length).toBe(1000);
        expect(page[999]!.data).toEqual({ i: 994 });
      });

      it('filters by category (everything before the first dash), stream and type', async () => {
        await seed();
        await store.appendToStream('order-3-gift', [event('OrderPlaced', { n: 6 })]);
        await store.appendToStream('nodash', [event('Loose', { n: 7 })]);
        const read = async (filter: NonNullable<Parameters<EventStore['readAll']>[0]>['filter']) =>
          dataOf(await store.readAll({ filter }));
        expect(await read({ categories: ['order'] })).toEqual([{ n: 1 }, { n: 3 }, { n: 4 }, { n: 6 }]);
        expect(await read({ categories: ['user', 'credential'] })).toEqual([{ n: 2 }, { n: 5 }]);
        expect(await read({ categories: ['nodash'] })).toEqual([{ n: 7 }]);
        expect(await read({ streams: ['order-1', 'user-1'] })).toEqual([{ n: 1 }, { n: 2 }, { n: 4 }]);
        expect(await read({ types: ['OrderPlaced'] })).toEqual([{ n: 1 }, { n: 3 }, { n: 6 }]);
        expect(await read({ categories: ['order'], types: ['OrderPaid', 'UserCreated'] })).toEqual([{ n: 4 }]);
        expect(await read({ categories: [] })).toEqual([]);
        const orders = await store.readAll({ after: 1n, limit: 2, filter: { categories: ['order'] } });
        expect(dataOf(orders)).toEqual([{ n: 3 }, { n: 4 }]);
      });

      it('filters by recordedAt: since inclusive, until exclusive', async () => {
        for (const n of [1, 2, 3]) {
          await store.appendToStream('tick-1', numbered(n));
          await sleep(5);
        }
        const [t1, t2, t3] = (await store.readStream('tick-1')).events.map((e) => e.recordedAt);
        expect(t1!.getTime() < t2!.getTime() && t2!.getTime() < t3!.getTime()).toBe(true);
        const read = async (since?: Date, until?: Date) => dataOf(await store.readAll({ filter: { since, until } }));
        expect(await read(t2)).toEqual([{ n: 2 }, { n: 3 }]);
        expect(await read(undefined, t2)).toEqual([{ n: 1 }]);
        expect(await read(t2, t3)).toEqual([{ n: 2 }]);
        expect(await read(t2, t2)).toEqual([]);
      });
    });

    describe('subscriptions', () => {
      it('replays history, then delivers live appends in global order', async () => {
        await store.appendToStream('order-1', numbered(1, 2));
        await store.appendToStream('user-1', numbered(3));
        const seen = collector();
        const subscription = subscribe({ after: 0n, handler: (events) => seen.handler(events) });
        await subscription.catchUp();
        expect(dataOf(seen.events)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
        await store.appendToStream('order-2', numbered(4));
        await store.appendToStream('order-1', numbered(5, 6));
        await vi.waitFor(() => expect(seen.events.length).toBe(6), { timeout: 5000, interval: 2 });
        expect(dataOf(seen.events)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }, { n: 5 }, { n: 6 }]);
        expect(positionsOf(seen.events)).toEqual(positionsOf(await store.readAll()));
      });

      it('starts after a non-zero position and respects batchSize', async () => {
        const { lastPosition } = await store.appendToStream('a-1', numbered(1, 2));
        await store.appendToStream('a-1', numbered(3, 4, 5, 6, 7, 8, 9));
        const seen = collector();
        await subscribe({ after: lastPosition, batchSize: 3, handler: (events) => seen.handler(events) }).catchUp();
        expect(dataOf(seen.events)).toEqual([3, 4, 5, 6, 7, 8, 9].map((n) => ({ n })));
        for (const batch of seen.batches) expect(batch.length).toBeLessThanOrEqual(3);
      });

      it('delivers only what matches the filter, in history and live', async () => {
        await store.appendToStream('order-1', numbered(1));
        await store.appendToStream('user-1', numbered(2));
        const seen = collector();
        const subscription = subscribe({
          after: 0n,
          filter: { categories: ['order'] },
          handler: (events) => seen.handler(events),
        });
        await subscription.catchUp();
        expect(dataOf(seen.events)).toEqual([{ n: 1 }]);
        await store.appendToStream('user-2', numbered(3));
        await store.appendToStream('order-2', numbered(4));
        await subscription.catchUp();
        expect(dataOf(seen.events)).toEqual([{ n: 1 }, { n: 4 }]);
      });

      it('calls a slow handler strictly sequentially; catchUp waits for it to finish', async () => {
        const seen = collector();
        const subscription = subscribe({ after: 0n, batchSize: 2, handler: (events) => seen.handler(events, 3) });
        for (const n of [1, 2, 3, 4, 5]) await store.appendToStream(`s-${n % 2}`, numbered(n));
        await subscription.catchUp();
        expect(dataOf(seen.events)).toEqual([1, 2, 3, 4, 5].map((n) => ({ n })));
        await subscription.catchUp();
        expect(seen.events.length).toBe(5);
      });

      it('stop waits for the handler in flight and delivers nothing afterwards', async () => {
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const delivered: unknown[] = [];
        let entered = false;
        const subscription = subscribe({
          after: 0n,
          handler: async (events) => {
            entered = true;
            await gate;
            delivered.push(...dataOf(events));
          },
        });
        await store.appendToStream('a-1', numbered(1));
        await vi.waitFor(() => expect(entered).toBe(true), { timeout: 5000, interval: 2 });
        let stopped = false;
        const stopping = subscription.stop().then(() => (stopped = true));
        try {
          await sleep(10);
          expect(stopped).toBe(false);
        } finally {
          release();
        }
        await stopping;
        expect(delivered).toEqual([{ n: 1 }]);
        await store.appendToStream('a-1', numbered(2));
        await sleep(100);
        expect(delivered).toEqual([{ n: 1 }]);
        await expect(subscription.catchUp()).rejects.toBeInstanceOf(Error);
      });

      it('stops on a handler throw and reports the error to onError', async () => {
        const failure = new Error('projection broke');
        const errors: unknown[] = [];
        let calls = 0;
        const subscription = subscribe({
          after: 0n,
          handler: () => {
            calls += 1;
            throw failure;
          },
          onError: (error) => errors.push(error),
        });
        await store.appendToStream('a-1', numbered(1));
        await vi.waitFor(() => expect(errors).toEqual([failure]), { timeout: 5000, interval: 2 });
        await store.appendToStream('a-1', numbered(2));
        await sleep(100);
        expect(calls).toBe(1);
        await expect(subscription.catchUp()).rejects.toBe(failure);
      });

      it('sees appends made through a second instance of the same store', async (context) => {
        if (fixture.second === undefined) return context.skip();
        const other = await fixture.second();
        seconds.push(other);
        const seen = collector();
        const subscription = subscribe({ after: 0n, handler: (events) => seen.handler(events) });
        await store.appendToStream('a-1', numbered(1));
        await subscription.catchUp();
        await sleep(30); // let wake-ups already scheduled by the first append run out
        await other.appendToStream('a-1', numbered(2), { expectedVersion: 1n });
        await vi.waitFor(() => expect(seen.events.length).toBe(2), { timeout: 5000, interval: 2 });
        expect(dataOf(seen.events)).toEqual([{ n: 1 }, { n: 2 }]);
        await expectConflict(store.appendToStream('a-1', numbered(3), { expectedVersion: 1n }), 'a-1', 1n, 2n);
        expect((await other.readStream('a-1')).version).toBe(2n);
        expect(await other.headPosition()).toBe(await store.headPosition());
      });
    });

    describe('checkpoints', () => {
      it('reads undefined when absent, then the last stored position (upsert)', async () => {
        expect(await store.readCheckpoint('publisher')).toBeUndefined();
        await store.storeCheckpoint('publisher', 5n);
        expect(await store.readCheckpoint('publisher')).toBe(5n);
        await store.storeCheckpoint('publisher', 3n);
        expect(await store.readCheckpoint('publisher')).toBe(3n);
        await store.storeCheckpoint('projection:inbox', 2n ** 60n);
        expect(await store.readCheckpoint('projection:inbox')).toBe(2n ** 60n);
        expect(await store.readCheckpoint('publisher')).toBe(3n);
      });

      it('lists every checkpoint by name', async () => {
        expect(await store.listCheckpoints()).toEqual(new Map());
        await store.storeCheckpoint('publisher', 5n);
        await store.storeCheckpoint('event-topics', 2n ** 60n);
        await store.storeCheckpoint('publisher', 7n);
        expect(await store.listCheckpoints()).toEqual(
          new Map([
            ['event-topics', 2n ** 60n],
            ['publisher', 7n],
          ]),
        );
      });
    });

    describe('lifecycle', () => {
      it('answers ping while open; after close every use fails with EventStoreUnavailableError', async () => {
        await expect(store.ping()).resolves.toBeUndefined();
        const seen = collector();
        const subscription = subscribe({ after: 0n, handler: (events) => seen.handler(events) });
        await store.close();
        await store.close();
        const uses: (() => Promise<unknown>)[] = [
          () => store.ping(),
          () => store.readStream('a-1'),
          () => store.appendToStream('a-1', numbered(1)),
          () => store.readAll(),
          () => store.headPosition(),
          () => store.readCheckpoint('x'),
          () => store.storeCheckpoint('x', 1n),
          () => store.listCheckpoints(),
        ];
        for (const use of uses) await expect(use()).rejects.toBeInstanceOf(EventStoreUnavailableError);
        expect(() => store.subscribe({ after: 0n, handler: () => undefined })).toThrow(EventStoreUnavailableError);
        await expect(subscription.catchUp()).rejects.toBeInstanceOf(Error);
        expect(seen.events).toEqual([]);
      });

      it('close stops subscriptions, waiting for the handler in flight', async () => {
        let release!: () => void;
        const gate = new Promise<void>((resolve) => (release = resolve));
        const handled: unknown[] = [];
        subscribe({
          after: 0n,
          handler: async (events) => {
            await gate;
            handled.push(...dataOf(events));
          },
        });
        await store.appendToStream('a-1', numbered(1));
        await sleep(20);
        let closed = false;
        const closing = store.close().then(() => (closed = true));
        try {
          await sleep(20);
          expect(closed).toBe(false);
        } finally {
          release();
        }
        await closing;
        expect(handled).toEqual([{ n: 1 }]);
      });
    });
  });
}
