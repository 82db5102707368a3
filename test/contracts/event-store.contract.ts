import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  DataKeyGoneError,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type EventFilter,
  type EventStore,
  type EventTagger,
  type ExpectedVersion,
  type NewDataKey,
  type NewEvent,
  type RecordedEvent,
  type Subscription,
} from '../../infra/event-store/port.ts';

/** Options of another instance on the same backing store. */
export interface EventStoreInstanceOptions {
  readonly tagger?: EventTagger;
}

/**
 * Where an adapter differs from the others by design; each quirk skips or narrows the tests it
 * names, and says why in the adapter's documentation.
 */
export interface EventStoreQuirks {
  /** A backlog may reach the handler in batches smaller than batchSize (EventStoreDB: the events its feed has ready). */
  readonly partialBatches?: boolean;
  /** An event id already used in another stream is not refused (EventStoreDB). */
  readonly duplicateIdsAcrossStreams?: boolean;
  /** Tags of another tagger version are derived when read, not all again at opening (EventStoreDB). */
  readonly tagsDerivedOnRead?: boolean;
  /** Keys put by an append are written before it, and stay when it fails (EventStoreDB and its vault). */
  readonly keysBesideTheAppend?: boolean;
  /** The store keeps no data keys (EventStoreDB without a vault). */
  readonly noKeys?: boolean;
}

/**
 * What an adapter's spec hands to the contract for each test.
 * - `store` must be EMPTY (fresh file, schema, database or namespace), and has no tagger.
 * - `teardown` closes the store (idempotent `close`) and releases the backing storage.
 * - `second`, when given, opens another instance on the SAME backing store, as another process
 *   would (a second connection, not a second handle on the same object), with the options given.
 *   The suite closes it. The tests of tags need it.
 * - `quiet`, when given, opens another instance on the same backing store that does not look for
 *   other processes' commits by itself within the test (its poll interval is 10 minutes).
 */
export interface EventStoreFixture {
  readonly store: EventStore;
  readonly teardown: () => Promise<void>;
  readonly second?: (options?: EventStoreInstanceOptions) => Promise<EventStore>;
  readonly quiet?: () => Promise<EventStore>;
  readonly quirks?: EventStoreQuirks;
}

const event = (type: string, data: unknown, metadata?: NewEvent['metadata']): NewEvent =>
  metadata === undefined ? { type, data } : { type, data, metadata };
const numbered = (...ns: number[]): NewEvent[] => ns.map((n) => event('Numbered', { n }));
const dataOf = (events: readonly RecordedEvent[]): unknown[] => events.map((e) => e.data);
const positionsOf = (events: readonly RecordedEvent[]): bigint[] => events.map((e) => e.globalPosition);
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
/** Waits until the clock has moved past `ms` (a condition, not a fixed pause). */
const clockPast = async (ms: number) => vi.waitFor(() => expect(Date.now()).toBeGreaterThan(ms), { timeout: 5000, interval: 1 });
/** A promise and the function that resolves it. */
const signal = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};
const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

const numbersOf = (events: readonly RecordedEvent[]): number[] => events.map((e) => (e.data as { n: number }).n);

/** Tags `<prefix><id>` for each id of the event's `apps`; counts its calls. */
const appTagger = (version: string, prefix = 'app:'): EventTagger & { calls: number } => {
  const tagger = {
    version,
    calls: 0,
    tagsOf(event: { readonly data: unknown }): string[] {
      tagger.calls += 1;
      const apps = (event.data as { apps?: unknown } | null)?.apps;
      return Array.isArray(apps) ? apps.map((app) => `${prefix}${String(app)}`) : [];
    },
  };
  return tagger;
};

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

    /** Another instance on the same backing store (closed by the suite). */
    const open = async (options?: EventStoreInstanceOptions): Promise<EventStore> => {
      const other = await fixture.second!(options);
      seconds.push(other);
      return other;
    };

    /**
     * Waits until a subscription made now has been handed `count` events: the store's wake-ups
     * for the appends before the call have run (what a stopped subscription would have needed).
     */
    const expectWitnessed = async (count: number) => {
      const witness = collector();
      const subscription = subscribe({ after: 0n, handler: (events) => witness.handler(events) });
      await subscription.catchUp();
      expect(witness.events.length).toBe(count);
      await subscription.stop();
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

      it('counts the events a read would return, after a position and with every criterion, up to a limit', async () => {
        const positions = await seed();
        await store.appendToStream('order-3-gift', [event('OrderPlaced', { n: 6 })]);
        const count = (options: Parameters<EventStore['countAll']>[0]) => store.countAll(options);
        expect(await count({ limit: 1000 })).toBe(6);
        expect(await count({ after: positions[1]!, limit: 1000 })).toBe(4);
        expect(await count({ after: positions[1]!, limit: 2 })).toBe(2);
        expect(await count({ limit: 0 })).toBe(0);
        expect(await count({ after: 1000n, limit: 10 })).toBe(0);
        expect(await count({ limit: 10, filter: { categories: ['order'] } })).toBe(4);
        expect(await count({ limit: 10, filter: { categories: ['user', 'credential'] } })).toBe(2);
        expect(await count({ limit: 10, filter: { categories: ['credential', 'order', 'credential'] } })).toBe(5);
        expect(await count({ limit: 3, filter: { categories: ['credential', 'order'] } })).toBe(3);
        expect(await count({ after: positions[2]!, limit: 10, filter: { categories: ['order', 'user'] } })).toBe(2);
        expect(await count({ limit: 10, filter: { streams: ['order-1', 'user-1'] } })).toBe(3);
        expect(await count({ limit: 10, filter: { types: ['OrderPlaced'] } })).toBe(3);
        expect(await count({ limit: 10, filter: { categories: ['order'], types: ['OrderPaid', 'UserCreated'] } })).toBe(1);
        expect(await count({ limit: 10, filter: { since: new Date(0) } })).toBe(6);
        expect(await count({ limit: 10, filter: { until: new Date(0) } })).toBe(0);
        expect(await count({ limit: 10, filter: { categories: [] } })).toBe(0);
        expect(await count({ limit: 10, filter: { types: [], categories: ['order'] } })).toBe(0);
        for (const limit of [-1, 1.5, Number.NaN]) await expect(count({ limit })).rejects.toBeInstanceOf(RangeError);
      });

      it('reads several categories in order over a range longer than a few thousand events, by pages, with the other criteria', async () => {
        // Interleaved: 3,000 events of three categories, appended a category at a time in turns of 100.
        const expected: number[] = [];
        let n = 0;
        for (let turn = 0; turn < 10; turn++) {
          for (const category of ['alpha', 'beta', 'gamma']) {
            const events = Array.from({ length: 100 }, () => {
              n += 1;
              if (category !== 'beta') expected.push(n);
              return event(n % 7 === 0 ? 'Seventh' : 'Other', { n });
            });
            await store.appendToStream(`${category}-${turn}`, events);
          }
        }
        const filter = { categories: ['gamma', 'alpha', 'gamma'] };
        const pages: number[][] = [];
        let after = 0n;
        for (;;) {
          const page = await store.readAll({ after, limit: 700, filter });
          if (page.length === 0) break;
          pages.push(page.map((e) => (e.data as { n: number }).n));
          after = page.at(-1)!.globalPosition;
        }
        expect(pages.map((page) => page.length)).toEqual([700, 700, 600]);
        expect(pages.flat()).toEqual(expected);
        expect(await store.countAll({ limit: 5000, filter })).toBe(expected.length);
        expect(await store.countAll({ limit: 1500, filter })).toBe(1500);
        expect(await store.countAll({ after: BigInt(expected[1000]!), limit: 5000, filter })).toBe(expected.length - 1001);
        const sevenths = await store.readAll({ limit: 5000, filter: { ...filter, types: ['Seventh'] } });
        expect(sevenths.map((e) => (e.data as { n: number }).n)).toEqual(expected.filter((k) => k % 7 === 0));
        // Sparse: pages of 50 where one event in ten matches.
        const pagedSevenths: number[] = [];
        for (let after = 0n; ; ) {
          const page = await store.readAll({ after, limit: 50, filter: { ...filter, types: ['Seventh'] } });
          if (page.length === 0) break;
          expect(page.length).toBeLessThanOrEqual(50);
          pagedSevenths.push(...page.map((e) => (e.data as { n: number }).n));
          after = page.at(-1)!.globalPosition;
        }
        expect(pagedSevenths).toEqual(expected.filter((k) => k % 7 === 0));

        const seen = collector();
        const subscription = subscribe({ after: 0n, batchSize: 250, filter, handler: (events) => seen.handler(events) });
        await subscription.catchUp();
        expect(dataOf(seen.events)).toEqual(expected.map((k) => ({ n: k })));
        for (const batch of seen.batches) expect(batch.length).toBeLessThanOrEqual(250);
      });

      it('filters by recordedAt: since inclusive, until exclusive', async () => {
        for (const n of [1, 2, 3]) {
          await store.appendToStream('tick-1', numbered(n));
          await clockPast(Date.now());
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
        const { promise: gate, resolve: release } = signal();
        const entered = signal();
        const delivered: unknown[] = [];
        const subscription = subscribe({
          after: 0n,
          handler: async (events) => {
            entered.resolve();
            await gate;
            delivered.push(...dataOf(events));
          },
        });
        await store.appendToStream('a-1', numbered(1));
        await entered.promise;
        let stopped = false;
        const stopping = subscription.stop().then(() => (stopped = true));
        try {
          // The handler holds until the gate opens: whatever ran meanwhile, stop must still wait.
          await new Promise<void>((resolve) => setImmediate(resolve));
          expect(stopped).toBe(false);
        } finally {
          release();
        }
        await stopping;
        expect(delivered).toEqual([{ n: 1 }]);
        await store.appendToStream('a-1', numbered(2));
        await expectWitnessed(2);
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
        await expectWitnessed(2);
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

    describe('wake-ups, backlogs and duplicate ids', () => {
      it('replays a backlog in full batches of batchSize', async (context) => {
        if (fixture.quirks?.partialBatches) return context.skip();
        await store.appendToStream('a-1', [1, 2, 3, 4, 5, 6, 7].map((n) => ({ type: 'T', data: n })));
        const sizes: number[] = [];
        await subscribe({ after: 0n, batchSize: 3, handler: (events) => void sizes.push(events.length) }).catchUp();
        expect(sizes).toEqual([3, 3, 1]);
      });

      it('wakes subscriptions on its own commits without waiting for a poll', async (context) => {
        if (fixture.quiet === undefined) return context.skip();
        const quiet = await fixture.quiet();
        seconds.push(quiet);
        const seen: RecordedEvent[] = [];
        const subscription = subscribe({ after: 0n, handler: (events) => void seen.push(...events) }, quiet);
        await quiet.appendToStream('a-1', [{ type: 'T', data: 'history' }]);
        await subscription.catchUp();
        await sleep(20); // idle: only an after-commit wake can deliver now
        await quiet.appendToStream('a-1', [{ type: 'T', data: 'live' }]);
        await vi.waitFor(() => expect(seen.map((e) => e.data)).toEqual(['history', 'live']), { timeout: 1000, interval: 1 });
      });

      it('catchUp sees commits of another connection even before the next poll', async (context) => {
        if (fixture.quiet === undefined || fixture.second === undefined) return context.skip();
        const quiet = await fixture.quiet();
        seconds.push(quiet);
        const other = await open();
        const seen: RecordedEvent[] = [];
        const subscription = subscribe({ after: 0n, handler: (events) => void seen.push(...events) }, quiet);
        await subscription.catchUp();
        await other.appendToStream('a-1', [{ type: 'T', data: 'elsewhere' }]);
        await subscription.catchUp();
        expect(seen.map((e) => e.data)).toEqual(['elsewhere']);
      });

      it('rejects a duplicate event id with a plain error and writes nothing', async (context) => {
        if (fixture.quirks?.duplicateIdsAcrossStreams) return context.skip();
        const id = '7d1c8f0a-0000-4000-8000-000000000001';
        await store.appendToStream('a-1', [{ id, type: 'T', data: 1 }]);
        const failure = await store.appendToStream('b-1', [{ id, type: 'T', data: 2 }]).catch((e: unknown) => e);
        expect(failure).toBeInstanceOf(Error);
        expect(failure).not.toBeInstanceOf(EventStoreUnavailableError);
        expect((failure as Error).message).toBe('Appending to b-1: an event with the same id already exists');
        expect(await store.readStream('b-1')).toEqual({ version: 0n, events: [] });
        // Nothing was left locked or half done: appends go on.
        expect((await store.appendToStream('b-1', [{ type: 'T', data: 3 }])).nextVersion).toBe(1n);
      });
    });

    describe('tags', () => {
      const tagged = (n: number, ...apps: string[]): NewEvent => event('Tagged', { n, apps });

      it('filters by tags: any of them, and every other criterion; an empty list matches nothing', async (context) => {
        if (fixture.second === undefined) return context.skip();
        const tagging = await open({ tagger: appTagger('1') });
        await tagging.appendToStream('order-1', [tagged(1, 'a'), tagged(2, 'b')]);
        await tagging.appendToStream('user-1', [tagged(3, 'a', 'b', 'a'), tagged(4)]);
        await tagging.appendToStream('order-2', [tagged(5, 'c'), event('Other', { n: 6, apps: ['a'] })]);
        await tagging.appendToStream('order-3', [{ ...tagged(7, 'a'), recordedAt: new Date('2020-01-01T00:00:00.000Z') }]);
        const read = async (filter: EventFilter, options: { after?: bigint; limit?: number } = {}) =>
          numbersOf(await tagging.readAll({ ...options, filter }));
        expect(await read({ tags: ['app:a'] })).toEqual([1, 3, 6, 7]);
        expect(await read({ tags: ['app:a', 'app:b'] })).toEqual([1, 2, 3, 6, 7]);
        expect(await read({ tags: ['app:b', 'app:a', 'app:b'] })).toEqual([1, 2, 3, 6, 7]);
        expect(await read({ tags: ['app:a'], categories: ['order'] })).toEqual([1, 6, 7]);
        expect(await read({ tags: ['app:a', 'app:c'], types: ['Tagged'] })).toEqual([1, 3, 5, 7]);
        expect(await read({ tags: ['app:a'], streams: ['user-1'] })).toEqual([3]);
        expect(await read({ tags: ['app:a'], until: new Date('2021-01-01T00:00:00.000Z') })).toEqual([7]);
        expect(await read({ tags: ['app:a'], since: new Date('2021-01-01T00:00:00.000Z') })).toEqual([1, 3, 6]);
        expect(await read({ tags: ['app:zzz'] })).toEqual([]);
        expect(await read({ tags: [] })).toEqual([]);
        expect(await read({ tags: [], categories: ['order'] })).toEqual([]);
        const count = (filter: EventFilter, options: { after?: bigint; limit?: number } = {}) => tagging.countAll({ limit: 100, ...options, filter });
        // An event that carries several of the tags counts once.
        expect(await count({ tags: ['app:a', 'app:b'] })).toBe(5);
        expect(await count({ tags: ['app:a', 'app:b'] }, { limit: 4 })).toBe(4);
        expect(await count({ tags: ['app:a'], categories: ['order'] })).toBe(3);
        expect(await count({ tags: ['app:a', 'app:c'], types: ['Tagged'] })).toBe(4);
        expect(await count({ tags: ['app:a'], since: new Date('2021-01-01T00:00:00.000Z') })).toBe(3);
        expect(await count({ tags: ['app:zzz'] })).toBe(0);
        expect(await count({ tags: [] })).toBe(0);
        const [first] = await tagging.readAll({ filter: { tags: ['app:a'] }, limit: 1 });
        expect(await read({ tags: ['app:a', 'app:b'] }, { after: first!.globalPosition, limit: 2 })).toEqual([2, 3]);
        expect(await count({ tags: ['app:a', 'app:b'] }, { after: first!.globalPosition })).toBe(4);
        // Tags are kept beside the events, not in them.
        expect((await tagging.readStream('user-1')).events.map((e) => e.metadata)).toEqual([{}, {}]);
      });

      it('reads the long histories of several tags in order, whole or page by page', async (context) => {
        if (fixture.second === undefined) return context.skip();
        const tagging = await open({ tagger: appTagger('1') });
        const all = Array.from({ length: 700 }, (_, i) => i);
        const events = all.map((i) => tagged(i, i % 2 === 0 ? 'a' : 'b', ...(i % 3 === 0 ? ['c'] : [])));
        await tagging.appendToStream('bulk-1', events.slice(0, 350));
        await tagging.appendToStream('bulk-2', events.slice(350));
        const expected = all.filter((i) => i % 2 === 0 || i % 3 === 0);
        expect(numbersOf(await tagging.readAll({ filter: { tags: ['app:a', 'app:c'] } }))).toEqual(expected);
        const paged: number[] = [];
        for (let after = 0n; ; ) {
          const page = await tagging.readAll({ after, limit: 100, filter: { tags: ['app:c', 'app:a'] } });
          if (page.length === 0) break;
          expect(page.length).toBeLessThanOrEqual(100);
          paged.push(...numbersOf(page));
          after = page.at(-1)!.globalPosition;
        }
        expect(paged).toEqual(expected);
        expect(await tagging.countAll({ limit: 1000, filter: { tags: ['app:c', 'app:a'] } })).toBe(expected.length);
        expect(await tagging.countAll({ limit: 100, filter: { tags: ['app:c', 'app:a'] } })).toBe(100);
        expect(numbersOf(await tagging.readAll({ filter: { tags: ['app:c'], streams: ['bulk-2'] } }))).toEqual(all.filter((i) => i >= 350 && i % 3 === 0));
      });

      it('subscriptions deliver by tags, in history and live', async (context) => {
        if (fixture.second === undefined) return context.skip();
        const tagging = await open({ tagger: appTagger('1') });
        await tagging.appendToStream('order-1', [tagged(1, 'a'), tagged(2, 'b')]);
        const seen = collector();
        const subscription = subscribe({ after: 0n, batchSize: 2, filter: { tags: ['app:a'] }, handler: (events) => seen.handler(events) }, tagging);
        await subscription.catchUp();
        expect(numbersOf(seen.events)).toEqual([1]);
        await tagging.appendToStream('order-2', [tagged(3, 'b'), tagged(4, 'a', 'b')]);
        await tagging.appendToStream('user-1', [10, 11, 12, 13, 14].map((n) => tagged(n, 'a')));
        await subscription.catchUp();
        expect(numbersOf(seen.events)).toEqual([1, 4, 10, 11, 12, 13, 14]);
      });

      it('without a tagger, writes no tags, and a tags filter matches nothing', async () => {
        await store.appendToStream('order-1', [tagged(1, 'a')]);
        expect(await store.readAll({ filter: { tags: ['app:a'] } })).toEqual([]);
        expect(await store.countAll({ limit: 10, filter: { tags: ['app:a'] } })).toBe(0);
        const seen = collector();
        await subscribe({ after: 0n, filter: { tags: ['app:a'] }, handler: (events) => seen.handler(events) }).catchUp();
        await expectWitnessed(1);
        expect(seen.events).toEqual([]);
        expect((await store.readStream('order-1')).events.map((e) => e.metadata)).toEqual([{}]);
      });

      it('derives the tags of every event again when opened with another tagger version, or after none', async (context) => {
        if (fixture.second === undefined) return context.skip();
        await store.appendToStream('order-1', [tagged(1, 'a'), tagged(2, 'b')]);
        const first = await open({ tagger: appTagger('1') });
        expect(numbersOf(await first.readAll({ filter: { tags: ['app:a'] } }))).toEqual([1]);
        await first.appendToStream('order-1', [tagged(3, 'a')]);
        const next = await open({ tagger: appTagger('2', 'tenant:') });
        expect(numbersOf(await next.readAll({ filter: { tags: ['tenant:a'] } }))).toEqual([1, 3]);
        expect(numbersOf(await next.readAll({ filter: { tags: ['tenant:b'] } }))).toEqual([2]);
        expect(await next.readAll({ filter: { tags: ['app:a'] } })).toEqual([]);
      });

      it('derives them once when two instances open with a new tagger version at the same time', async (context) => {
        if (fixture.second === undefined || fixture.quirks?.tagsDerivedOnRead) return context.skip();
        const count = 2_500;
        await store.appendToStream('bulk-1', Array.from({ length: count }, (_, i) => tagged(i, String(i % 7))));
        const tagger = appTagger('2');
        const [a, b] = await Promise.all([open({ tagger }), open({ tagger })]);
        await Promise.all([a.ping(), b.ping()]);
        expect(tagger.calls).toBe(count);
        const threes = Array.from({ length: count }, (_, i) => i).filter((i) => i % 7 === 3);
        expect(numbersOf(await a.readAll({ filter: { tags: ['app:3'] } }))).toEqual(threes);
        expect(numbersOf(await b.readAll({ filter: { tags: ['app:3'] } }))).toEqual(threes);
        // Opened again with the same version: nothing to derive.
        await (await open({ tagger })).ping();
        expect(tagger.calls).toBe(count);
      });
    });

    describe('byte-bounded reads', () => {
      // {"n":1,"s":"éé…é"} with 50 × 'é' (2 bytes in UTF-8) is 114 bytes of data (64 characters),
      // and {} is 2 of metadata: 116 bytes an event, 66 characters.
      const EVENT_BYTES = 116;
      const sized = (n: number): NewEvent => ({ type: 'Sized', data: { n, s: 'é'.repeat(50) } });

      it('ends a page of readAll once its events hold maxBytes of data and metadata, with at least one event', async () => {
        await store.appendToStream('sized-1', [1, 2, 3, 4, 5].map(sized));
        const page = async (options: { after?: bigint; limit?: number; maxBytes?: number; filter?: EventFilter }) => numbersOf(await store.readAll(options));
        expect(await page({ maxBytes: EVENT_BYTES * 3 })).toEqual([1, 2, 3]);
        expect(await page({ maxBytes: EVENT_BYTES * 3 - 1 })).toEqual([1, 2]);
        expect(await page({ maxBytes: 1 })).toEqual([1]);
        expect(await page({ maxBytes: EVENT_BYTES * 5 })).toEqual([1, 2, 3, 4, 5]);
        expect(await page({})).toEqual([1, 2, 3, 4, 5]);
        expect(await page({ limit: 2, maxBytes: EVENT_BYTES * 5 })).toEqual([1, 2]);
        expect(await page({ maxBytes: EVENT_BYTES * 2, filter: { types: ['Sized'] } })).toEqual([1, 2]);
        // Metadata counts too.
        await store.appendToStream('sized-2', [{ ...sized(6), metadata: { note: 'x'.repeat(EVENT_BYTES) } }, sized(7)]);
        const [sixth] = await store.readAll({ after: 0n, limit: 1, filter: { streams: ['sized-2'] } });
        expect(await page({ after: sixth!.globalPosition - 1n, maxBytes: EVENT_BYTES * 2 })).toEqual([6]);
        // Page after page, nothing is lost.
        const paged: number[] = [];
        for (let after = 0n; ; ) {
          const events = await store.readAll({ after, maxBytes: EVENT_BYTES * 2 });
          if (events.length === 0) break;
          paged.push(...numbersOf(events));
          after = events.at(-1)!.globalPosition;
        }
        expect(paged).toEqual([1, 2, 3, 4, 5, 6, 7]);
        for (const maxBytes of [0, -1, 1.5, Number.NaN]) await expect(store.readAll({ maxBytes })).rejects.toBeInstanceOf(RangeError);
      });

      it('ends a page by tags the same way', async (context) => {
        if (fixture.second === undefined) return context.skip();
        const tagging = await open({ tagger: appTagger('1') });
        await tagging.appendToStream('sized-1', [1, 2, 3, 4, 5].map((n) => ({ type: 'Sized', data: { n, s: 'é'.repeat(50), apps: ['a'] } })));
        expect(numbersOf(await tagging.readAll({ filter: { tags: ['app:a'] }, maxBytes: 2 * (EVENT_BYTES + 13) }))).toEqual([1, 2]);
        expect(numbersOf(await tagging.readAll({ filter: { tags: ['app:a'] }, maxBytes: 1 }))).toEqual([1]);
      });

      it('hands a subscription handler at most maxBatchBytes per call, at least one event, and skips none', async () => {
        await store.appendToStream('sized-1', [1, 2, 3, 4, 5].map(sized));
        const pairs = collector();
        await subscribe({ after: 0n, maxBatchBytes: EVENT_BYTES * 2, handler: (events) => pairs.handler(events) }).catchUp();
        expect(numbersOf(pairs.events)).toEqual([1, 2, 3, 4, 5]);
        if (fixture.quirks?.partialBatches) for (const batch of pairs.batches) expect(batch.length).toBeLessThanOrEqual(2);
        else expect(pairs.batches.map(numbersOf)).toEqual([[1, 2], [3, 4], [5]]);
        const ones = collector();
        const subscription = subscribe({ after: 0n, maxBatchBytes: 1, handler: (events) => ones.handler(events) });
        await subscription.catchUp();
        await store.appendToStream('sized-1', [6, 7].map(sized));
        await subscription.catchUp();
        expect(ones.batches.map(numbersOf)).toEqual([[1], [2], [3], [4], [5], [6], [7]]);
        expect(() => store.subscribe({ after: 0n, maxBatchBytes: 0, handler: () => undefined })).toThrow(RangeError);
      });
    });

    describe('any JSON text JavaScript produces', () => {
      it('round-trips data and metadata holding NUL, unpaired surrogates and other odd strings', async () => {
        const odd = ['\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud83d', '\ud83dy', '\udc00\ud800', '\ud83d\ude00', '\ufffe\uffff', '\u2028\u2029', '"\\/\b\f\n\r\t', '\u007f\u0080\u00ff', ''];
        const data = { list: odd, 'key\u0000': 1, '\ud800key': '\udbff', nested: { deep: [odd, { '': '\u0000' }] } };
        const metadata = { actor: 'user:\u0000', note: '\udc00', odd };
        await store.appendToStream('odd-1', [{ type: 'Odd', data, metadata }, { type: 'Odd', data: '\u0000\ud800' }, { type: 'Odd', data: odd }]);
        const expected = [JSON.parse(JSON.stringify(data)) as unknown, '\u0000\ud800', odd];
        expect(expected[0]).toEqual(data);
        const { events } = await store.readStream('odd-1');
        expect(dataOf(events)).toEqual(expected);
        expect(events[0]!.metadata).toEqual(metadata);
        expect(dataOf(await store.readAll())).toEqual(expected);
        const seen = collector();
        await subscribe({ after: 0n, handler: (batch) => seen.handler(batch) }).catchUp();
        expect(dataOf(seen.events)).toEqual(expected);
        expect(seen.events[0]!.metadata).toEqual(metadata);
      });
    });

    describe('data keys', () => {
      const now = new Date('2030-01-01T00:00:00.000Z');
      const later = new Date('2030-02-01T00:00:00.000Z');
      const key = (id: string, extra: Partial<NewDataKey> = {}): NewDataKey => ({
        id,
        scope: 'app-1',
        subject: `sendbatch-${id}`,
        wrapped: `wrapped:${id}`,
        uses: 2,
        expiresAt: later,
        ...extra,
      });
      const keyIds = async () => (await store.keys.list(undefined, 100)).map((k) => k.id);
      const skipWithoutKeys = (context: { skip: () => void }) => {
        if (fixture.quirks?.noKeys) context.skip();
      };

      it('puts keys with an append; get answers with the keys usable at `now`', async (context) => {
        skipWithoutKeys(context);
        await store.appendToStream('sendbatch-1', numbered(1), {
          keys: { put: [key('k1'), key('k2', { expiresAt: now }), key('k3', { scope: 'app-2' })] },
        });
        expect(await store.keys.get(['k1', 'k2', 'k3', 'nope'], now)).toEqual(
          new Map([
            ['k1', 'wrapped:k1'],
            ['k3', 'wrapped:k3'],
          ]),
        );
        expect(await store.keys.get(['k2'], new Date(now.getTime() - 1))).toEqual(new Map([['k2', 'wrapped:k2']]));
        expect(await store.keys.get([], now)).toEqual(new Map());
        await store.appendToStream('app-2', [event('AppDeleted', {})], { keys: { retireScopes: ['app-2'] } });
        expect(await store.keys.get(['k1', 'k3'], now)).toEqual(new Map([['k1', 'wrapped:k1']]));
        // Only the keys that existed were retired.
        await store.appendToStream('sendbatch-4', numbered(4), { keys: { put: [key('k4', { scope: 'app-2' })] } });
        expect(await store.keys.get(['k4'], now)).toEqual(new Map([['k4', 'wrapped:k4']]));
        expect(dataOf(await store.readAll())).toEqual([{ n: 1 }, {}, { n: 4 }]);
      });

      it('requires a key that may still be used, writing nothing to it; one that may not (used up, expired, retired, unknown) fails the append and writes nothing', async (context) => {
        skipWithoutKeys(context);
        const past = new Date(Date.now() - 1000);
        await store.appendToStream('sendbatch-1', numbered(1), {
          keys: { put: [key('k1'), key('k2', { uses: 1 }), key('k3', { expiresAt: past }), key('k4', { scope: 'app-2' })] },
        });
        const before = await store.keys.list(undefined, 10);
        await store.appendToStream('sendbatch-2', numbered(2), { keys: { require: ['k1', 'k1'] } });
        expect(await store.keys.list(undefined, 10)).toEqual(before);
        await store.keys.release(['k2']);
        await store.appendToStream('app-2', [event('AppDeleted', {})], { keys: { retireScopes: ['app-2'] } });
        for (const id of ['k2', 'k3', 'k4', 'never']) {
          const failure = await store.appendToStream('sendbatch-x', numbered(9), { keys: { require: ['k1', id], put: [key(`new-${id}`)] } }).catch((error: unknown) => error);
          expect(failure, id).toBeInstanceOf(DataKeyGoneError);
          expect((failure as DataKeyGoneError).keyIds).toEqual([id]);
        }
        expect((await store.readStream('sendbatch-x')).version).toBe(0n);
        expect(dataOf(await store.readAll())).toEqual([{ n: 1 }, { n: 2 }, {}]);
        expect((await store.keys.list(undefined, 10)).map((k) => [k.id, k.uses, k.usesLeft])).toEqual([
          ['k1', 2, 2],
          ['k2', 1, 0],
          ['k3', 2, 2],
          ['k4', 2, 2],
        ]);
      });

      it('a version conflict writes no key change', async (context) => {
        skipWithoutKeys(context);
        await store.appendToStream('a-1', numbered(1), { keys: { put: [key('k1'), key('k2')] } });
        const before = await store.keys.list(undefined, 10);
        await expectConflict(
          store.appendToStream('a-1', numbered(2), {
            expectedVersion: 0n,
            keys: { put: [key('k9')], release: ['k1'], retireScopes: ['app-1'], destroy: ['k2'] },
          }),
          'a-1',
          0n,
          1n,
        );
        const after = await store.keys.list(undefined, 10);
        if (fixture.quirks?.keysBesideTheAppend) expect(after.filter((k) => k.id !== 'k9')).toEqual(before);
        else expect(after).toEqual(before);
        expect(before.map((k) => [k.id, k.usesLeft, k.scopeRetired])).toEqual([
          ['k1', 2, false],
          ['k2', 2, false],
        ]);
        expect(dataOf((await store.readStream('a-1')).events)).toEqual([{ n: 1 }]);
        expect(await store.keys.due(now, 10)).toEqual([]);
      });

      it('destroys a key once: destroying it again, or a key that never was, fails the append and writes nothing', async (context) => {
        skipWithoutKeys(context);
        await store.appendToStream('a-1', numbered(1), { keys: { put: [key('k1'), key('k2')] } });
        await store.appendToStream('shred-1', [event('KeyDestroyed', { id: 'k1' })], { keys: { destroy: ['k1'] } });
        expect(await store.keys.get(['k1', 'k2'], now)).toEqual(new Map([['k2', 'wrapped:k2']]));
        expect(await keyIds()).toEqual(['k2']);
        const again = await store
          .appendToStream('shred-1', [event('KeyDestroyed', { id: 'k1' })], { keys: { destroy: ['k2', 'k1', 'never'], release: ['k2'] } })
          .catch((e: unknown) => e);
        expect(again).toBeInstanceOf(DataKeyGoneError);
        expect(again).toMatchObject({ name: 'DataKeyGoneError', keyIds: ['k1', 'never'] });
        expect((await store.readStream('shred-1')).version).toBe(1n);
        expect((await store.keys.list(undefined, 10)).map((k) => [k.id, k.usesLeft])).toEqual([['k2', 2]]);
        await expect(store.appendToStream('shred-1', [], { keys: { destroy: ['k1'] } })).rejects.toBeInstanceOf(DataKeyGoneError);
        expect((await store.readAll()).length).toBe(2);
      });

      it('an append of no events applies its key changes, once the expected version is checked', async (context) => {
        skipWithoutKeys(context);
        const { lastPosition } = await store.appendToStream('a-1', numbered(1));
        expect(await store.appendToStream('a-1', [], { expectedVersion: 1n, keys: { put: [key('k1')] } })).toEqual({ nextVersion: 1n, lastPosition });
        expect(await store.keys.get(['k1'], now)).toEqual(new Map([['k1', 'wrapped:k1']]));
        await expectConflict(store.appendToStream('a-1', [], { expectedVersion: 0n, keys: { release: ['k1'] } }), 'a-1', 0n, 1n);
        expect((await store.keys.list(undefined, 10)).map((k) => k.usesLeft)).toEqual([2]);
        expect(await store.appendToStream('none-1', [], { keys: { release: ['k1'] } })).toEqual({ nextVersion: 0n, lastPosition: 0n });
        expect((await store.keys.list(undefined, 10)).map((k) => k.usesLeft)).toEqual([1]);
        expect((await store.readAll()).length).toBe(1);
      });

      it('releases one use per id and the uses given with an id, down to 0, ignoring unknown ids; due lists retired keys oldest first, scope before expired before used', async (context) => {
        skipWithoutKeys(context);
        const expired = new Date('2029-06-01T00:00:00.000Z');
        // Created in this order (not the ids'): due lists them oldest first.
        await store.appendToStream('a-1', numbered(1), {
          keys: {
            put: [
              key('k3', { scope: 'app-2', uses: 1, expiresAt: expired }),
              key('k1', { uses: 2 }),
              key('k2', { uses: 1, expiresAt: expired }),
              key('k5', { uses: 5 }),
              key('k4', { uses: 1 }),
            ],
          },
        });
        await store.keys.release(['k1', { id: 'k1', uses: 2 }, 'unknown', 'k4']);
        await store.appendToStream('a-1', [], { keys: { release: ['k2', 'k3', { id: 'k5', uses: 3 }], retireScopes: ['app-2'] } });
        expect((await store.keys.list(undefined, 10)).map((k) => [k.id, k.uses, k.usesLeft, k.scopeRetired])).toEqual([
          ['k1', 2, 0, false],
          ['k2', 1, 0, false],
          ['k3', 1, 0, true],
          ['k4', 1, 0, false],
          ['k5', 5, 2, false],
        ]);
        const due = (id: string, because: string, scope = 'app-1') => ({ id, scope, subject: `sendbatch-${id}`, because });
        expect(await store.keys.due(now, 10)).toEqual([due('k3', 'scope', 'app-2'), due('k1', 'used'), due('k2', 'expired'), due('k4', 'used')]);
        expect(await store.keys.due(now, 2)).toEqual([due('k3', 'scope', 'app-2'), due('k1', 'used')]);
        expect(await store.keys.due(new Date('2029-01-01T00:00:00.000Z'), 10)).toEqual([
          due('k3', 'scope', 'app-2'),
          due('k1', 'used'),
          due('k2', 'used'),
          due('k4', 'used'),
        ]);
        // A key past its expiry, whatever its uses.
        await expect(store.keys.release([{ id: 'k5', uses: 0 }])).rejects.toThrow(RangeError);
        expect((await store.keys.due(new Date('2031-01-01T00:00:00.000Z'), 10)).map((k) => [k.id, k.because])).toEqual([
          ['k3', 'scope'],
          ['k1', 'expired'],
          ['k2', 'expired'],
          ['k5', 'expired'],
          ['k4', 'expired'],
        ]);
        // Destroyed keys are no longer due.
        await store.appendToStream('shred-1', [event('KeysDestroyed', {})], { keys: { destroy: ['k3', 'k1'] } });
        expect((await store.keys.due(now, 10)).map((k) => k.id)).toEqual(['k2', 'k4']);
      });

      it('lists every key in id order, page by page, and imports keys as they are, leaving existing ids unchanged', async (context) => {
        skipWithoutKeys(context);
        await store.appendToStream('a-1', numbered(1), { keys: { put: ['k4', 'k2', 'k5', 'k1', 'k3'].map((id) => key(id)) } });
        await store.appendToStream('a-1', [], { keys: { release: ['k2'], retireScopes: ['app-1'] } });
        const listed = await store.keys.list(undefined, 10);
        expect(listed.map((k) => k.id)).toEqual(['k1', 'k2', 'k3', 'k4', 'k5']);
        expect(listed[1]).toEqual({ ...key('k2'), usesLeft: 1, scopeRetired: true });
        expect((await store.keys.list(undefined, 2)).map((k) => k.id)).toEqual(['k1', 'k2']);
        expect((await store.keys.list('k2', 2)).map((k) => k.id)).toEqual(['k3', 'k4']);
        expect((await store.keys.list('k4', 2)).map((k) => k.id)).toEqual(['k5']);
        expect(await store.keys.list('k5', 2)).toEqual([]);
        await store.appendToStream('shred-1', [event('KeysDestroyed', {})], { keys: { destroy: ['k1', 'k2'] } });
        await store.keys.release(['k3']);
        const imported = { ...key('k9', { scope: 'app-9', uses: 3 }), usesLeft: 0, scopeRetired: false };
        await store.keys.import([...listed, imported]);
        expect(await store.keys.list(undefined, 10)).toEqual([listed[0], listed[1], { ...listed[2], usesLeft: 1 }, listed[3], listed[4], imported]);
        expect(await store.keys.get(['k9'], now)).toEqual(new Map([['k9', 'wrapped:k9']]));
      });

      it('refuses bad keys, and a key id that exists, writing nothing', async (context) => {
        skipWithoutKeys(context);
        await store.appendToStream('a-1', numbered(1), { keys: { put: [key('k1')] } });
        const bad: NewDataKey[][] = [[key('k2', { uses: 0 })], [key('k2', { uses: 1.5 })], [key('k2', { expiresAt: new Date(Number.NaN) })], [key('k2', { wrapped: '' })], [key('k2'), key('k2')]];
        for (const put of bad) await expect(store.appendToStream('a-1', numbered(2), { keys: { put } })).rejects.toBeInstanceOf(RangeError);
        const duplicate = await store.appendToStream('a-1', numbered(2), { keys: { put: [key('k3'), key('k1', { wrapped: 'other' })] } }).catch((e: unknown) => e);
        expect(duplicate).toBeInstanceOf(Error);
        expect(duplicate).not.toBeInstanceOf(RangeError);
        expect(duplicate).not.toBeInstanceOf(DataKeyGoneError);
        expect((await store.readStream('a-1')).version).toBe(1n);
        expect(await keyIds()).toEqual(['k1']);
        expect(await store.keys.get(['k1'], now)).toEqual(new Map([['k1', 'wrapped:k1']]));
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
          () => store.countAll({ limit: 1 }),
          () => store.headPosition(),
          () => store.readCheckpoint('x'),
          () => store.storeCheckpoint('x', 1n),
          () => store.listCheckpoints(),
          ...(fixture.quirks?.noKeys
            ? []
            : [
                () => store.keys.get(['k'], new Date()),
                () => store.keys.get([], new Date()),
                () => store.keys.release(['k']),
                () => store.keys.release([]),
                () => store.keys.due(new Date(), 1),
                () => store.keys.list(undefined, 1),
                () => store.keys.import([]),
              ]),
        ];
        for (const use of uses) await expect(use()).rejects.toBeInstanceOf(EventStoreUnavailableError);
        expect(() => store.subscribe({ after: 0n, handler: () => undefined })).toThrow(EventStoreUnavailableError);
        await expect(subscription.catchUp()).rejects.toBeInstanceOf(Error);
        expect(seen.events).toEqual([]);
      });

      it('close stops subscriptions, waiting for the handler in flight', async () => {
        const { promise: gate, resolve: release } = signal();
        const entered = signal();
        const handled: unknown[] = [];
        subscribe({
          after: 0n,
          handler: async (events) => {
            entered.resolve();
            await gate;
            handled.push(...dataOf(events));
          },
        });
        await store.appendToStream('a-1', numbered(1));
        await entered.promise;
        let closed = false;
        const closing = store.close().then(() => (closed = true));
        try {
          // The handler holds until the gate opens: whatever ran meanwhile, close must still wait.
          await new Promise<void>((resolve) => setImmediate(resolve));
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
