import { describe, expect, it, vi } from 'vitest';
import type { RecordedEvent } from '../port.ts';
import type { Feed, FeedItem } from './feed.ts';
import { byteBatches, createLiveSubscription, type LiveSource } from './live-subscription.ts';

/** An in-memory $all: entries with commit positions, some of them "matching" the subscription. */
interface Raw {
  readonly commit: bigint;
  readonly matching: boolean;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const fakeLog = () => {
  const entries: Raw[] = [];
  const feeds = new Set<{ push(item: FeedItem<Raw>): void; fail(error: Error): void }>();
  let commit = 100n;
  const opened: (bigint | undefined)[] = [];
  let failNextOpen: Error | undefined;

  const openFeed = (after: bigint): Feed<Raw> => {
    const queue: FeedItem<Raw>[] = entries.filter((e) => e.commit > after).map((event) => ({ kind: 'event', event }));
    let wake: (() => void) | undefined;
    let closed = false;
    let failure: Error | undefined;
    const handle = {
      push(item: FeedItem<Raw>) {
        queue.push(item);
        wake?.();
      },
      fail(error: Error) {
        failure = error;
        wake?.();
      },
    };
    feeds.add(handle);
    const poll = () => {
      if (closed) return undefined;
      const item = queue.shift();
      if (item !== undefined) return item;
      if (failure !== undefined) throw failure;
      return undefined;
    };
    return {
      poll,
      async next() {
        for (;;) {
          const item = poll();
          if (item !== undefined || closed) return item;
          await new Promise<void>((resolve) => (wake = resolve));
        }
      },
      async close() {
        closed = true;
        feeds.delete(handle);
        wake?.();
      },
    };
  };

  return {
    opened,
    append(matching: boolean) {
      commit += 10n;
      const raw = { commit, matching };
      entries.push(raw);
      for (const feed of feeds) feed.push({ kind: 'event', event: raw });
      return raw;
    },
    failFeeds(error: Error) {
      for (const feed of [...feeds]) feed.fail(error);
    },
    failNextOpen(error: Error) {
      failNextOpen = error;
    },
    source(after: bigint): LiveSource<Raw> {
      return {
        async open(resume) {
          opened.push(resume?.commit);
          if (failNextOpen !== undefined) {
            const error = failNextOpen;
            failNextOpen = undefined;
            throw error;
          }
          return openFeed(resume?.commit ?? after);
        },
        commitOf: (raw) => raw.commit,
        convert: async (raws) =>
          raws
            .filter((raw) => raw.matching && raw.commit > after)
            .map((raw) => ({ globalPosition: raw.commit, data: Number(raw.commit) }) as unknown as RecordedEvent),
        initialHandled: async () => after,
        lastToDeliver: async (handled) => entries.filter((e) => e.matching && e.commit > handled && e.commit > after).at(-1)?.commit,
        retryable: (error) => error instanceof Error && error.message === 'transient',
        bytesOf: (event) => JSON.stringify(event.data).length,
      };
    },
  };
};

const positions = (batches: RecordedEvent[][]) => batches.flat().map((e) => e.globalPosition);

describe('EventStoreDB live subscription', () => {
  it('replays, follows live appends in batches, and catchUp waits for the handler', async () => {
    const log = fakeLog();
    for (let i = 0; i < 7; i++) log.append(true);
    const batches: RecordedEvent[][] = [];
    const subscription = createLiveSubscription(
      log.source(0n),
      {
        after: 0n,
        batchSize: 3,
        handler: async (events) => {
          await sleep(2);
          batches.push(events);
        },
      },
      () => undefined,
    );
    await subscription.catchUp();
    expect(positions(batches)).toEqual([110n, 120n, 130n, 140n, 150n, 160n, 170n]);
    for (const batch of batches) expect(batch.length).toBeLessThanOrEqual(3);
    log.append(true);
    await subscription.catchUp();
    expect(positions(batches).at(-1)).toBe(180n);
    await subscription.stop();
  });

  it('catchUp does not wait for events that are filtered out', async () => {
    const log = fakeLog();
    log.append(true);
    log.append(false);
    const seen: RecordedEvent[][] = [];
    const subscription = createLiveSubscription(log.source(0n), { after: 0n, handler: (events) => void seen.push(events) }, () => undefined);
    await subscription.catchUp();
    expect(positions(seen)).toEqual([110n]);
    log.append(false);
    await subscription.catchUp();
    expect(positions(seen)).toEqual([110n]);
    await subscription.stop();
  });

  it('opens a new server subscription after the last handled event when the server fails', async () => {
    const log = fakeLog();
    log.append(true);
    const seen: RecordedEvent[][] = [];
    const errors: unknown[] = [];
    const subscription = createLiveSubscription(
      log.source(0n),
      { after: 0n, handler: (events) => void seen.push(events), onError: (error) => errors.push(error) },
      () => undefined,
    );
    await subscription.catchUp();
    log.failNextOpen(new Error('transient'));
    log.failFeeds(new Error('transient'));
    log.append(true);
    await vi.waitFor(() => expect(positions(seen)).toEqual([110n, 120n]), { timeout: 2000, interval: 5 });
    expect(log.opened).toEqual([undefined, 110n, 110n]);
    expect(errors).toEqual([]);
    await subscription.stop();
  });

  it('stops and reports other failures, and a handler throw', async () => {
    const log = fakeLog();
    log.append(true);
    const errors: unknown[] = [];
    const broken = new Error('access denied');
    const first = createLiveSubscription(log.source(0n), { after: 0n, handler: () => undefined, onError: (e) => errors.push(e) }, () => undefined);
    await first.catchUp();
    log.failFeeds(broken);
    await vi.waitFor(() => expect(errors).toEqual([broken]), { timeout: 1000, interval: 2 });
    await expect(first.catchUp()).rejects.toBe(broken);

    const thrown = new Error('projection broke');
    const stopped: unknown[] = [];
    let calls = 0;
    const second = createLiveSubscription(
      log.source(0n),
      {
        after: 0n,
        handler: () => {
          calls += 1;
          throw thrown;
        },
        onError: (e) => errors.push(e),
      },
      (s) => stopped.push(s),
    );
    await vi.waitFor(() => expect(errors).toEqual([broken, thrown]), { timeout: 1000, interval: 2 });
    log.append(true);
    await sleep(20);
    expect(calls).toBe(1);
    expect(stopped).toEqual([second]);
    await expect(second.catchUp()).rejects.toBe(thrown);
  });

  it('stop waits for the handler in flight and delivers nothing afterwards', async () => {
    const log = fakeLog();
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const delivered: bigint[] = [];
    let entered = false;
    const subscription = createLiveSubscription(
      log.source(0n),
      {
        after: 0n,
        handler: async (events) => {
          entered = true;
          await gate;
          delivered.push(...events.map((e) => e.globalPosition));
        },
      },
      () => undefined,
    );
    log.append(true);
    await vi.waitFor(() => expect(entered).toBe(true), { timeout: 1000, interval: 2 });
    let done = false;
    const stopping = subscription.stop().then(() => (done = true));
    await sleep(10);
    expect(done).toBe(false);
    release();
    await stopping;
    log.append(true);
    await sleep(20);
    expect(delivered).toEqual([110n]);
    await expect(subscription.catchUp()).rejects.toBeInstanceOf(Error);
  });

  it('starts after `after` and validates batchSize', async () => {
    const log = fakeLog();
    for (let i = 0; i < 3; i++) log.append(true);
    const seen: RecordedEvent[][] = [];
    const subscription = createLiveSubscription(log.source(120n), { after: 120n, handler: (events) => void seen.push(events) }, () => undefined);
    await subscription.catchUp();
    expect(positions(seen)).toEqual([130n]);
    await subscription.stop();
    expect(() => createLiveSubscription(log.source(0n), { after: 0n, batchSize: 0, handler: () => undefined }, () => undefined)).toThrow(RangeError);
  });

  it('hands the handler at most maxBatchBytes per call (at least one event), without losing any', async () => {
    const log = fakeLog();
    for (let i = 0; i < 5; i++) log.append(true); // commits 110..150: 3 bytes each
    const seen: RecordedEvent[][] = [];
    const subscription = createLiveSubscription(log.source(0n), { after: 0n, maxBatchBytes: 6, handler: (events) => void seen.push(events) }, () => undefined);
    await subscription.catchUp();
    expect(seen.map((batch) => batch.map((e) => e.globalPosition))).toEqual([[110n, 120n], [130n, 140n], [150n]]);
    await subscription.stop();
    expect(() => createLiveSubscription(log.source(0n), { after: 0n, maxBatchBytes: 0, handler: () => undefined }, () => undefined)).toThrow(RangeError);
  });

  it('cuts events into runs of at most maxBytes, an oversized event alone', () => {
    const events = [5, 1, 1, 9, 2, 2, 2].map((size, i) => ({ globalPosition: BigInt(i), size }) as unknown as RecordedEvent);
    const sizeOf = (event: RecordedEvent) => (event as unknown as { size: number }).size;
    expect(byteBatches(events, 6, sizeOf).map((batch) => batch.map(sizeOf))).toEqual([[5, 1], [1], [9], [2, 2, 2]]);
    expect(byteBatches([], 6, sizeOf)).toEqual([]);
  });
});
