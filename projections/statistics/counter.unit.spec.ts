import { describe, expect, it } from 'vitest';
import { bucketOf, FIVE_MINUTES, MINUTES, oldestKept } from '../../domain/statistics/buckets.ts';
import { FIGURES } from '../../domain/statistics/tally.ts';
import { BucketList, Counter } from './counter.ts';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');

describe('BucketList (one tier of an app-messenger)', () => {
  it('given a burst in one bucket, when counted, then it holds that bucket in the smallest arrays', () => {
    const list = new BucketList(FIVE_MINUTES);
    for (let i = 0; i < 200; i++) list.add(1000, { received: 1 }, 701);
    expect(list.size).toBe(1);
    expect(list.stamps.length).toBe(2);
    expect(list.stored(701, 1000)).toEqual([[1000, ...FIGURES.map((f) => (f === 'received' ? 200 : 0))]]);
  });

  it('given events a little out of order, when counted, then the buckets stay in order with their sums', () => {
    const list = new BucketList(MINUTES);
    list.add(10, { accepted: 1 }, 0);
    list.add(12, { accepted: 2 }, 0);
    list.add(11, { delivered: 3 }, 0);
    list.add(10, { accepted: 4 }, 0);
    expect(list.stored(0, 12).map(([bucket, ...counts]) => [bucket, counts[FIGURES.indexOf('accepted')], counts[FIGURES.indexOf('delivered')]])).toEqual([
      [10, 5, 0],
      [11, 0, 3],
      [12, 2, 0],
    ]);
  });

  it('given a busy day and then a quiet one, when counted, then it never holds more than the tier keeps and gives the room back', () => {
    const counter = new Counter('app', 'signal');
    let latest = T0;
    for (let minute = 0; minute < 2 * 24 * 60; minute++) {
      latest = T0 + minute * 60_000;
      counter.add(latest, { accepted: 1 }, latest);
      expect(counter.tiers[1]!.size).toBeLessThanOrEqual(FIVE_MINUTES.kept);
      expect(counter.tiers[1]!.stamps.length).toBeLessThanOrEqual(FIVE_MINUTES.kept);
      expect(counter.tiers[0]!.stamps.length).toBeLessThanOrEqual(MINUTES.kept);
    }
    expect(counter.tiers[1]!.size).toBe(FIVE_MINUTES.kept);
    // One message a day later: the minute tier keeps only it, the five-minute tier the last hour of the busy day and it.
    latest += 24 * 3_600_000 - 3_600_000;
    counter.add(latest, { accepted: 1 }, latest);
    expect(counter.tiers[0]!.size).toBe(1);
    expect(counter.tiers[0]!.stamps.length).toBe(2);
    expect(counter.tiers[1]!.size).toBe(1 + (bucketOf(T0 + (2 * 24 * 60 - 1) * 60_000, FIVE_MINUTES) - oldestKept(latest, FIVE_MINUTES) + 1));
    expect(counter.tiers[1]!.stamps.length).toBeLessThan(FIVE_MINUTES.kept);
    expect(counter.newest(1)).toBe(bucketOf(latest, FIVE_MINUTES));
  });

  it('given random traffic, when counted, then it holds exactly what a plain map of the kept buckets holds', () => {
    let seed = 7;
    const random = () => ((seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31);
    const list = new BucketList(MINUTES);
    const plain = new Map<number, number>();
    let latest = T0;
    for (let i = 0; i < 20_000; i++) {
      latest += Math.floor(random() * 40_000);
      const at = latest - Math.floor(random() * 3) * 60_000; // up to two minutes late
      const bucket = bucketOf(at, MINUTES);
      const oldest = oldestKept(latest, MINUTES);
      if (bucket < oldest) continue;
      list.add(bucket, { received: 1 }, oldest);
      plain.set(bucket, (plain.get(bucket) ?? 0) + 1);
      for (const key of plain.keys()) if (key < oldest) plain.delete(key);
      if (i % 97 === 0) {
        const stored = list.stored(oldest, bucketOf(latest, MINUTES)).map(([bucket, ...counts]) => [bucket, counts[FIGURES.indexOf('received')]]);
        expect(stored).toEqual([...plain].sort((a, b) => a[0] - b[0]));
      }
    }
  });
});
