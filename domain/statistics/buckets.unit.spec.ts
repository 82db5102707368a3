import { describe, expect, it } from 'vitest';
import { bucketOf, bucketStart, FIVE_MINUTES, isKept, MINUTES, oldestKept, WINDOW_LAYOUT, windowBuckets, WINDOWS } from './buckets.ts';

const at = (iso: string) => Date.parse(iso);

describe('statistics buckets', () => {
  it('given an instant, when bucketed, then its bucket starts at the minute (or five minutes) that holds it', () => {
    const instant = at('2026-03-01T10:07:59.999Z');
    expect(new Date(bucketStart(bucketOf(instant, MINUTES), MINUTES)).toISOString()).toBe('2026-03-01T10:07:00.000Z');
    expect(new Date(bucketStart(bucketOf(instant, FIVE_MINUTES), FIVE_MINUTES)).toISOString()).toBe('2026-03-01T10:05:00.000Z');
    // A bucket's first millisecond is its own, its last millisecond too; the next starts after it.
    expect(bucketOf(at('2026-03-01T10:07:00.000Z'), MINUTES)).toBe(bucketOf(instant, MINUTES));
    expect(bucketOf(at('2026-03-01T10:08:00.000Z'), MINUTES)).toBe(bucketOf(instant, MINUTES) + 1);
  });

  it('given now, when the last hour is asked for, then it is the current minute and the 59 before it', () => {
    const window = windowBuckets('hour', at('2026-03-01T10:07:30.000Z'));
    expect(window).toMatchObject({ tier: MINUTES, count: 60 });
    expect(window.last - window.first + 1).toBe(60);
    expect(new Date(window.fromMs).toISOString()).toBe('2026-03-01T09:08:00.000Z');
    expect(new Date(window.toMs).toISOString()).toBe('2026-03-01T10:08:00.000Z');
  });

  it('given now, when the last day is asked for, then it is 288 five-minute buckets ending with the current one', () => {
    const window = windowBuckets('day', at('2026-03-01T10:07:30.000Z'));
    expect(window).toMatchObject({ tier: FIVE_MINUTES, count: 288 });
    expect(new Date(window.fromMs).toISOString()).toBe('2026-02-28T10:10:00.000Z');
    expect(new Date(window.toMs).toISOString()).toBe('2026-03-01T10:10:00.000Z');
  });

  it('given the newest event, when a bucket is checked, then a tier keeps exactly its last `kept` buckets', () => {
    const latest = at('2026-03-01T10:07:30.000Z');
    const newest = bucketOf(latest, MINUTES);
    expect(oldestKept(latest, MINUTES)).toBe(newest - 63);
    expect(isKept(newest - 63, latest, MINUTES)).toBe(true);
    expect(isKept(newest - 64, latest, MINUTES)).toBe(false);
    expect(isKept(newest + 1, latest, MINUTES)).toBe(false);
    expect(isKept(bucketOf(latest, FIVE_MINUTES) - 299, latest, FIVE_MINUTES)).toBe(true);
    expect(isKept(bucketOf(latest, FIVE_MINUTES) - 300, latest, FIVE_MINUTES)).toBe(false);
  });

  it('given any window, when laid out, then it fits in what its tier keeps (so a read never needs a dropped bucket)', () => {
    for (const window of WINDOWS) expect(WINDOW_LAYOUT[window].buckets).toBeLessThanOrEqual(WINDOW_LAYOUT[window].tier.kept);
  });
});
