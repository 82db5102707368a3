import { afterEach, describe, expect, it, vi } from 'vitest';
import type { AsyncSubscriptionSource } from './catch-up-subscription.ts';
import type { EventFilter } from './port.ts';
import { createSubscriptionRegistry, type SubscriptionRegistry } from './subscription-registry.ts';

/** A log whose head the test moves, counting the reads of each filter's subscription. */
const fakeLog = () => {
  let head = 0n;
  const reads = new Map<string, number>();
  const source: AsyncSubscriptionSource = {
    committedHead: async () => head,
    read: async (after, _limit, _maxBytes, filter: EventFilter | undefined) => {
      const name = filter?.categories?.join(',') ?? 'all';
      reads.set(name, (reads.get(name) ?? 0) + 1);
      return { events: [], scanned: head > after ? head : after, more: false };
    },
  };
  return { source, grow: () => (head += 1n), reads: (name: string) => reads.get(name) ?? 0 };
};

let registry: SubscriptionRegistry | undefined;
afterEach(async () => registry?.stopAll());

describe('subscription registry', () => {
  it('wakes, after an append of this store, the subscriptions that read its category or every category', async () => {
    const log = fakeLog();
    registry = createSubscriptionRegistry({ source: log.source, head: () => log.source.committedHead(), pollIntervalMs: 600_000 });
    for (const filter of [{ categories: ['a'] }, { categories: ['b', 'c'] }, undefined]) registry.subscribe({ after: 0n, filter, handler: () => undefined });
    await vi.waitFor(() => expect([log.reads('a'), log.reads('b,c'), log.reads('all')]).toEqual([1, 1, 1])); // their first read

    log.grow();
    registry.wakeSoon('c');
    await vi.waitFor(() => expect([log.reads('b,c'), log.reads('all')]).toEqual([2, 2]));
    log.grow();
    registry.wakeSoon('a');
    await vi.waitFor(() => expect([log.reads('a'), log.reads('all')]).toEqual([2, 3]));
    expect(log.reads('b,c')).toBe(2);

    // Without a category (a commit of another thread, the poll): every subscription behind the head.
    log.grow();
    registry.wakeSoon();
    await vi.waitFor(() => expect([log.reads('a'), log.reads('b,c'), log.reads('all')]).toEqual([3, 3, 4]));
  });

  it('the poll wakes every subscription, also those an append of another category left behind', async () => {
    const log = fakeLog();
    registry = createSubscriptionRegistry({ source: log.source, head: () => log.source.committedHead(), pollIntervalMs: 20 });
    registry.subscribe({ after: 0n, filter: { categories: ['a'] }, handler: () => undefined });
    await vi.waitFor(() => expect(log.reads('a')).toBe(1));
    log.grow();
    registry.wakeSoon('b');
    await vi.waitFor(() => expect(log.reads('a')).toBe(2), { timeout: 2000 });
  });

  it("tells the adapter each head a wake read, and whether the poll's wake read it", async () => {
    const log = fakeLog();
    const heads: Array<[bigint, boolean]> = [];
    registry = createSubscriptionRegistry({ source: log.source, head: () => log.source.committedHead(), onHead: (head, polled) => void heads.push([head, polled]), pollIntervalMs: 600_000 });
    registry.subscribe({ after: 0n, handler: () => undefined });
    log.grow();
    registry.wakeSoon('a');
    await vi.waitFor(() => expect(heads).toEqual([[1n, false]]));

    const polling = createSubscriptionRegistry({ source: log.source, head: () => log.source.committedHead(), onHead: (head, polled) => void heads.push([head, polled]), pollIntervalMs: 20 });
    try {
      polling.subscribe({ after: 1n, handler: () => undefined });
      log.grow();
      await vi.waitFor(() => expect(heads).toContainEqual([2n, true]), { timeout: 2000 });
    } finally {
      await polling.stopAll();
    }
  });
});
