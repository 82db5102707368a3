import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { alignedTicks } from './aligned-ticks.ts';

describe('alignedTicks (lease renewals on the same moments in every thread and process)', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('ticks at the multiples of the period of the wall clock, whenever it was started', () => {
    vi.setSystemTime(10_000_000 + 1_234);
    const at: number[] = [];
    const first = alignedTicks(1_000, () => at.push(Date.now()));
    vi.setSystemTime(Date.now()); // the same clock, started later by 400 ms in another holder
    vi.advanceTimersByTime(400);
    const later: number[] = [];
    const second = alignedTicks(1_000, () => later.push(Date.now()));
    vi.advanceTimersByTime(4_000);
    first.stop();
    second.stop();
    expect(at).toEqual([10_002_000, 10_003_000, 10_004_000, 10_005_000]);
    expect(later).toEqual([10_003_000, 10_004_000, 10_005_000]);
  });

  it('ticks at the first multiple at least half a period away (a timer fired a little early does not tick again at once)', () => {
    vi.setSystemTime(4_999_999);
    const at: number[] = [];
    const ticks = alignedTicks(1_000, () => at.push(Date.now()));
    vi.advanceTimersByTime(2_001);
    ticks.stop();
    expect(at).toEqual([5_001_000, 5_002_000]);
  });

  it('stops', () => {
    vi.setSystemTime(0);
    let ticks = 0;
    const timer = alignedTicks(100, () => void ticks++);
    vi.advanceTimersByTime(250);
    timer.stop();
    vi.advanceTimersByTime(1_000);
    expect(ticks).toBe(2);
  });
});
