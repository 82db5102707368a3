import { prefixedNames } from '../../domain/shared/prefixed-names.ts';
import type { Limiter } from '../limits/limiter.ts';

/**
 * Per-credential rate limiting, per the interface's Limits section: separate buckets per
 * endpoint (`poll:<credentialId>`, `send:<credentialId>`), windows anchored at a bucket's first
 * use and lasting `windowMs`, held in this process only, expired buckets evicted periodically.
 */

/** The public API's buckets of a credential (`poll:<credentialId>` ...), each name made once. */
export const buckets = {
  poll: prefixedNames('poll:'),
  send: prefixedNames('send:'),
  verify: prefixedNames('verify:'),
} as const;

export interface LimitDecision {
  readonly allowed: boolean;
  /** Units left in the window after this decision. */
  readonly remaining: number;
  /** Epoch ms when the window ends. */
  readonly resetAt: number;
}

interface Bucket {
  windowStart: number;
  used: number;
}

export class RateLimiter implements Limiter {
  private readonly buckets = new Map<string, Bucket>();
  private readonly evictTimer: NodeJS.Timeout;

  constructor(
    private readonly windowMs: number,
    evictEveryMs: number,
    private readonly now: () => number = Date.now,
  ) {
    this.evictTimer = setInterval(() => this.evictExpired(), evictEveryMs);
    this.evictTimer.unref();
  }

  private bucket(key: string, now: number): Bucket {
    let bucket = this.buckets.get(key);
    if (!bucket || now >= bucket.windowStart + this.windowMs) {
      bucket = { windowStart: now, used: 0 };
      this.buckets.set(key, bucket);
    }
    return bucket;
  }

  /**
   * Takes `cost` units if all of them fit in what is left, else takes nothing (a batch over the
   * remaining budget is rejected whole).
   */
  consume(key: string, cost: number, limit: number): LimitDecision {
    const now = this.now();
    const bucket = this.bucket(key, now);
    const resetAt = bucket.windowStart + this.windowMs;
    if (bucket.used + cost > limit) return { allowed: false, remaining: Math.max(0, limit - bucket.used), resetAt };
    bucket.used += cost;
    return { allowed: true, remaining: limit - bucket.used, resetAt };
  }

  /** Gives back units taken by a request that then failed before anything was enqueued. */
  refund(key: string, cost: number): void {
    const bucket = this.buckets.get(key);
    if (bucket) bucket.used = Math.max(0, bucket.used - cost);
  }

  evictExpired(): number {
    const now = this.now();
    let evicted = 0;
    for (const [key, bucket] of this.buckets) {
      if (now >= bucket.windowStart + this.windowMs) {
        this.buckets.delete(key);
        evicted++;
      }
    }
    return evicted;
  }

  get size(): number {
    return this.buckets.size;
  }

  close(): void {
    clearInterval(this.evictTimer);
  }
}
