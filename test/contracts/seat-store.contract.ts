import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SeatStore } from '../../infra/limits/seats.ts';

export interface SeatStoreFixture {
  readonly store: SeatStore;
  /** Another instance on the same backing store; the suite closes it (or drops it, for a dead one). */
  readonly second?: () => Promise<SeatStore>;
  readonly teardown: () => Promise<void>;
}

/** What every SeatStore adapter must do: at most `cap` seats per group, from every instance. */
export const seatStoreContract = (name: string, open: () => Promise<SeatStoreFixture>) =>
  describe(`SeatStore contract: ${name}`, () => {
    let f: SeatStoreFixture;
    let group: string;
    beforeEach(async () => {
      f = await open();
      group = `events:user:${randomUUID()}`;
    });
    afterEach(async () => {
      await f.teardown();
    });

    it('gives at most cap seats of a group, and one again once one is released', async () => {
      const seats = [await f.store.take(group, 2), await f.store.take(group, 2)];
      expect(seats.every((s) => typeof s === 'string')).toBe(true);
      expect(await f.store.take(group, 2)).toBeUndefined();
      expect(await f.store.take(`${group}:other`, 2)).toEqual(expect.any(String));
      await f.store.release(group, seats[0]!);
      expect(await f.store.take(group, 2)).toEqual(expect.any(String));
    });

    it('never gives more than cap to concurrent takes from every instance', async () => {
      const stores = [f.store, ...(f.second ? [await f.second(), await f.second()] : [])];
      try {
        const seats = await Promise.all(Array.from({ length: 30 }, (_, i) => stores[i % stores.length]!.take(group, 7)));
        expect(seats.filter((s) => s !== undefined)).toHaveLength(7);
      } finally {
        for (const s of stores.slice(1)) await s.close();
      }
    });

    it('frees the seats of an instance that closes', async () => {
      if (!f.second) return;
      const other = await f.second();
      expect(await other.take(group, 1)).toEqual(expect.any(String));
      expect(await f.store.take(group, 1)).toBeUndefined();
      await other.close();
      expect(await f.store.take(group, 1)).toEqual(expect.any(String));
    });
  });
