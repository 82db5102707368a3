import type { LimitDecision, Limiter } from '../services/limiter.ts';

/**
 * Rate limiting in this process only (the embedded default; the fallback of a shared limit whose
 * store is away): windows anchored at a key's first use and lasting `windowMs`, expired windows
 * evicted periodically.
 */

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
