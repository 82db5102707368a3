import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { LimitStore } from '../../infra/limits/port.ts';

export interface LimitStoreFixture {
  readonly store: LimitStore;
  /** Another connection (process) on the same backing store, when the adapter has one; the suite closes it. */
  readonly second?: () => Promise<LimitStore>;
  readonly teardown: () => Promise<void>;
}

const WINDOW = 60_000;
const T = 1_800_000_000_000;

/** What every LimitStore adapter must do: windows, never more than the limit, give-backs, eviction. */
export const limitStoreContract = (name: string, open: () => Promise<LimitStoreFixture>) =>
  describe(`LimitStore contract: ${name}`, () => {
    let f: LimitStoreFixture;
    let key: string;
    beforeEach(async () => {
      f = await open();
      key = `send:${randomUUID()}`;
    });
    afterEach(async () => {
      await f.teardown();
    });

    it('opens a window at the first lease and hands out at most the limit in it', async () => {
      expect(await f.store.lease(key, 30, 100, WINDOW, T)).toEqual({ granted: 30, grantedTotal: 30, windowStart: T, resetAt: T + WINDOW });
      expect(await f.store.lease(key, 60, 100, WINDOW, T + 10)).toEqual({ granted: 60, grantedTotal: 90, windowStart: T, resetAt: T + WINDOW });
      expect(await f.store.lease(key, 30, 100, WINDOW, T + 20)).toEqual({ granted: 10, grantedTotal: 100, windowStart: T, resetAt: T + WINDOW });
      expect(await f.store.lease(key, 1, 100, WINDOW, T + 30)).toEqual({ granted: 0, grantedTotal: 100, windowStart: T, resetAt: T + WINDOW });
    });

    it('opens a new window once the last one ended', async () => {
      await f.store.lease(key, 100, 100, WINDOW, T);
      expect(await f.store.lease(key, 5, 100, WINDOW, T + WINDOW)).toEqual({ granted: 5, grantedTotal: 5, windowStart: T + WINDOW, resetAt: T + 2 * WINDOW });
    });

    it('takes back what is given back in the same window, and nothing for a window that is over', async () => {
      await f.store.lease(key, 100, 100, WINDOW, T);
      await f.store.giveBack(key, T, 40);
      expect(await f.store.lease(key, 50, 100, WINDOW, T + 1)).toMatchObject({ granted: 40, grantedTotal: 100 });
      await f.store.lease(key, 3, 100, WINDOW, T + WINDOW); // a new window
      await f.store.giveBack(key, T, 50); // given back to the old one: ignored
      expect(await f.store.lease(key, 100, 100, WINDOW, T + WINDOW + 1)).toMatchObject({ granted: 97, grantedTotal: 100 });
    });

    it('keeps keys apart', async () => {
      await f.store.lease(key, 100, 100, WINDOW, T);
      expect(await f.store.lease(`${key}:other`, 7, 100, WINDOW, T)).toMatchObject({ granted: 7, grantedTotal: 7 });
    });

    it('forgets ended windows', async () => {
      await f.store.lease(key, 1, 100, WINDOW, T);
      expect(await f.store.evict(T + WINDOW - 1)).toBeGreaterThanOrEqual(0);
      expect(await f.store.lease(key, 1, 100, WINDOW, T + 1)).toMatchObject({ grantedTotal: 2 });
      expect(await f.store.evict(T + WINDOW)).toBeGreaterThanOrEqual(1);
      expect(await f.store.lease(key, 1, 100, WINDOW, T + WINDOW)).toMatchObject({ grantedTotal: 1, windowStart: T + WINDOW });
    });

    it('never hands out more than the limit to concurrent leases, from every connection', async () => {
      const stores = [f.store, ...(f.second ? [await f.second(), await f.second()] : [])];
      try {
        const leases = await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % stores.length]!.lease(key, 7, 200, WINDOW, T + i)));
        expect(leases.reduce((sum, l) => sum + l.granted, 0)).toBe(200);
        expect(new Set(leases.map((l) => l.windowStart)).size).toBe(1); // one window, opened by whichever lease came first
      } finally {
        for (const s of stores.slice(1)) await s.close();
      }
    });
  });
