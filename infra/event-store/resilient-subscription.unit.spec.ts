import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { startCheckpointedSubscription } from './checkpointed-subscription.ts';
import type { EventStore, RecordedEvent } from './port.ts';
import { startResilientSubscription } from './resilient-subscription.ts';
import { createSqliteEventStore } from './sqlite/sqlite-event-store.ts';

const dirs: string[] = [];
const stores: EventStore[] = [];
afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
  dirs.splice(0).forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }));
});
const openStore = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-resilient-'));
  dirs.push(dir);
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal', pollIntervalMs: 5 });
  stores.push(store);
  return store;
};
const numbered = (...ns: number[]) => ns.map((n) => ({ type: 'Numbered', data: { n } }));
const numbers = (events: readonly RecordedEvent[]) => events.map((e) => (e.data as { n: number }).n);

describe('resilient subscription', () => {
  it('resumes after failures from where resumeAfter says, pausing longer each time, and from the first pause once a batch is handled', async () => {
    const store = openStore();
    await store.appendToStream('a-1', numbered(1, 2, 3));
    const handled: number[] = [];
    const pauses: number[] = [];
    let failures = 3;
    const subscription = await startResilientSubscription(store, {
      filter: { categories: ['a'] },
      resumeAfter: () => BigInt(handled.length),
      handler: (events) => {
        if (failures > 0) {
          failures -= 1;
          throw new Error('handler broke');
        }
        handled.push(...numbers(events));
      },
      onFailure: (_error, retryInMs) => pauses.push(retryInMs),
      minDelayMs: 5,
      maxDelayMs: 12,
    });
    try {
      await vi.waitFor(() => expect(handled).toEqual([1, 2, 3]), { timeout: 5000, interval: 2 });
      expect(pauses).toEqual([5, 10, 12]);
      expect(subscription.following).toBe(true);
      failures = 1;
      await store.appendToStream('a-1', numbered(4));
      await vi.waitFor(() => expect(handled).toEqual([1, 2, 3, 4]), { timeout: 5000, interval: 2 });
      expect(pauses).toEqual([5, 10, 12, 5]);
      await store.appendToStream('b-1', numbered(99));
      await store.appendToStream('a-1', numbered(5));
      await subscription.catchUp();
      expect(handled).toEqual([1, 2, 3, 4, 5]);
    } finally {
      await subscription.stop();
    }
  });

  it('keeps trying while it cannot subscribe, says it is not following meanwhile, and stop ends the attempts', async () => {
    const store = openStore();
    let attempts = 0;
    const failures: unknown[] = [];
    const subscription = await startResilientSubscription(store, {
      filter: {},
      resumeAfter: () => {
        attempts += 1;
        throw new Error('checkpoint unreadable');
      },
      handler: () => undefined,
      onFailure: (error) => failures.push(error),
      minDelayMs: 1,
      maxDelayMs: 2,
    });
    await vi.waitFor(() => expect(attempts).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 1 });
    expect(subscription.following).toBe(false);
    await expect(subscription.catchUp()).resolves.toBeUndefined();
    await subscription.stop();
    const stoppedAt = attempts;
    // Once stopped, no attempt is left: a subscription made now catches up while none comes.
    await store.appendToStream('a-1', numbered(1));
    const witness = store.subscribe({ after: 0n, handler: () => undefined });
    await witness.catchUp();
    await witness.stop();
    expect(attempts).toBe(stoppedAt);
    expect(failures.length).toBe(stoppedAt);
  });
});

describe('checkpointed subscription', () => {
  it('stores its checkpoint after each batch and resumes from it after a failure, so a failed batch comes again', async () => {
    const store = openStore();
    await store.appendToStream('a-1', numbered(1, 2, 3, 4, 5));
    const calls: number[][] = [];
    let fail = true;
    const subscription = await startCheckpointedSubscription(store, {
      name: 'test',
      filter: { categories: ['a'] },
      batchSize: 2,
      log: pino({ level: 'silent' }),
      handler: async (events) => {
        calls.push(numbers(events));
        if (fail && numbers(events).includes(3)) {
          fail = false;
          throw new Error('broker down');
        }
      },
    });
    try {
      await vi.waitFor(() => expect(calls.flat().slice(-1)).toEqual([5]), { timeout: 5000, interval: 2 });
      // The checkpoint is stored once the handler has finished with the batch: wait for it too.
      await vi.waitFor(async () => expect(await store.readCheckpoint('test')).toBe(5n), { timeout: 5000, interval: 2 });
      expect(calls).toEqual([[1, 2], [3, 4], [3, 4], [5]]);
    } finally {
      await subscription.stop();
    }
  });

  it('given events its filter leaves out after the last it handled, when it has been quiet, then its checkpoint moves to the head; never past an event it has not handled', async () => {
    const store = openStore();
    await store.appendToStream('a-1', numbered(1));
    let release: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const subscription = await startCheckpointedSubscription(store, {
      name: 'test',
      filter: { categories: ['a'] },
      advanceWhenQuietMs: 10,
      log: pino({ level: 'silent' }),
      handler: async (events) => {
        if (numbers(events).includes(3)) await held;
      },
    });
    try {
      await store.appendToStream('b-1', numbered(2)); // left out by the filter
      await vi.waitFor(async () => expect(await store.readCheckpoint('test')).toBe(2n), { timeout: 5000, interval: 5 });
      await store.appendToStream('a-1', numbered(3), { expectedVersion: 1n });
      await store.appendToStream('b-1', numbered(4), { expectedVersion: 1n });
      // Quiet periods pass while the handler holds event 3: the checkpoint stays before it.
      const until = Date.now() + 200;
      while (Date.now() < until) {
        expect(await store.readCheckpoint('test')).toBe(2n);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      release();
      await vi.waitFor(async () => expect(await store.readCheckpoint('test')).toBe(4n), { timeout: 5000, interval: 5 });
    } finally {
      release();
      await subscription.stop();
    }
  });
});
