import { afterEach, describe, expect, it } from 'vitest';
import { RateLimiter } from './rate-limiter.ts';

let now = 1_000_000;
const limiters: RateLimiter[] = [];
const limiter = () => {
  const l = new RateLimiter(60_000, 300_000, () => now);
  limiters.push(l);
  return l;
};
afterEach(() => limiters.splice(0).forEach((l) => l.close()));

describe('rate limiter', () => {
  it('counts units in a window anchored at first use and resets after it', () => {
    const l = limiter();
    now = 1_000_000;
    expect(l.consume('send:c', 599, 600)).toEqual({ allowed: true, remaining: 1, resetAt: 1_060_000 });
    now += 30_000;
    expect(l.consume('send:c', 2, 600)).toEqual({ allowed: false, remaining: 1, resetAt: 1_060_000 });
    expect(l.consume('send:c', 1, 600)).toEqual({ allowed: true, remaining: 0, resetAt: 1_060_000 });
    now = 1_060_000;
    expect(l.consume('send:c', 1, 600)).toEqual({ allowed: true, remaining: 599, resetAt: 1_120_000 });
  });

  it('keeps buckets apart', () => {
    const l = limiter();
    expect(l.consume('poll:c', 100, 100).allowed).toBe(true);
    expect(l.consume('poll:c', 1, 100).allowed).toBe(false);
    expect(l.consume('send:c', 1, 600).allowed).toBe(true);
    expect(l.consume('poll:d', 1, 100).allowed).toBe(true);
  });

  it('a rejected batch takes nothing; a refund gives units back', () => {
    const l = limiter();
    l.consume('send:c', 10, 20);
    expect(l.consume('send:c', 11, 20).allowed).toBe(false);
    expect(l.consume('send:c', 10, 20)).toMatchObject({ allowed: true, remaining: 0 });
    l.refund('send:c', 5);
    expect(l.consume('send:c', 5, 20)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('evicts expired buckets only', () => {
    const l = limiter();
    now = 0;
    l.consume('a', 1, 10);
    now = 50_000;
    l.consume('b', 1, 10);
    now = 60_000;
    expect(l.evictExpired()).toBe(1);
    expect(l.size).toBe(1);
  });
});
