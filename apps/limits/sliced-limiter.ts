import { LimitStoreUnavailableError, type LimitLease, type LimitStore } from '../../infra/limits/port.ts';
import { RateLimiter } from './rate-limiter.ts';
import type { LimitDecision } from '../services/limiter.ts';
import type { Limiter } from '../services/limiter.ts';

/**
 * A rate limit shared by every instance on one LimitStore, without a round trip per request. Each
 * instance leases a slice of a key's window budget from the store (a tenth of the limit, at least
 * what the request needs), spends it locally, and gives back what it has not spent after
 * `idleGiveBackMs` without use, or when a request it cannot serve leaves units in its hands. So:
 *
 * - the store never hands out more than the limit in a window: all instances together never allow
 *   more than the budget (the bound is exact from above);
 * - a request may be refused while units of the window sit unspent in other instances' slices: at
 *   most one slice per other instance, for at most `idleGiveBackMs` (then they are given back); an
 *   instance that dies takes its slice with it until the window ends;
 * - every instance answers with the window's shared start and end (`resetAt`); `remaining` is the
 *   budget not yet handed out plus this instance's own slice;
 * - once the budget is spent, an instance refuses a key's requests for `refusePauseMs` (250 ms)
 *   without asking the store: a client hammering past its budget costs the store four leases a
 *   second per instance, not one per request.
 *
 * While the store cannot be reached, each instance holds the key's budget alone in its own memory
 * (a RateLimiter): limits stay, but per instance, until the store answers again (logged once).
 */
export interface SlicedLimiterOptions {
  readonly windowMs: number;
  readonly idleGiveBackMs?: number;
  /** After a lease that could not cover a request, how long requests for the key are refused without asking the store (default 250 ms). */
  readonly refusePauseMs?: number;
  readonly evictEveryMs?: number;
  /** Units leased at once beyond a request's need: default a tenth of the limit. */
  readonly sliceOf?: (limit: number) => number;
  readonly now?: () => number;
  readonly onStoreFailure?: (error: Error) => void;
  /** The name a key has in the store (a keyed hash: keys hold addresses and e-mail addresses, not written down in clear). */
  readonly storeKey?: (key: string) => string;
}

interface Slice {
  readonly windowStart: number;
  readonly resetAt: number;
  left: number;
  /** Units handed out in the window by the store, as of this instance's last lease. */
  grantedTotal: number;
  lastUsed: number;
  /** After a lease that could not cover a request: refuse here without asking the store until then. */
  exhaustedUntil: number;
}

export class SlicedLimiter implements Limiter {
  private readonly slices = new Map<string, Slice>();
  /** The lease in flight per key: one at a time, the others wait for it. */
  private readonly pending = new Map<string, Promise<boolean>>();
  private readonly fallback: RateLimiter;
  private readonly timers: NodeJS.Timeout[];
  private readonly now: () => number;
  private readonly idleGiveBackMs: number;
  private readonly sliceOf: (limit: number) => number;
  private storeFailing = false;

  constructor(
    private readonly store: LimitStore,
    private readonly options: SlicedLimiterOptions,
  ) {
    this.now = options.now ?? Date.now;
    this.idleGiveBackMs = options.idleGiveBackMs ?? 1_000;
    this.sliceOf = options.sliceOf ?? ((limit) => Math.max(1, Math.ceil(limit / 10)));
    this.fallback = new RateLimiter(options.windowMs, options.evictEveryMs ?? options.windowMs, this.now);
    this.timers = [
      setInterval(() => void this.giveBackIdle(), this.idleGiveBackMs),
      setInterval(() => void this.store.evict(this.now()).catch(() => undefined), options.evictEveryMs ?? options.windowMs),
    ];
    for (const timer of this.timers) timer.unref();
  }

  consume(key: string, cost: number, limit: number): LimitDecision | Promise<LimitDecision> {
    const now = this.now();
    const slice = this.current(key, now);
    if (slice && slice.left >= cost) return this.take(slice, cost, limit, now);
    if (slice && now < slice.exhaustedUntil && !this.pending.has(key)) return this.refuse(slice, limit);
    return this.consumeLeasing(key, cost, limit);
  }

  refund(key: string, cost: number): void {
    const slice = this.current(key, this.now());
    if (slice) slice.left += cost;
    else this.fallback.refund(key, cost);
  }

  close(): void {
    for (const timer of this.timers) clearInterval(timer);
    this.fallback.close();
    for (const [key, slice] of this.slices) if (slice.left > 0) void this.store.giveBack(this.storeKeyOf(key), slice.windowStart, slice.left).catch(() => undefined);
    this.slices.clear();
  }

  /** Gives back every slice's unspent units now (for a test, or before a planned stop). */
  async giveBackAll(): Promise<void> {
    await this.giveBackIdle(0);
  }

  private current(key: string, now: number): Slice | undefined {
    const slice = this.slices.get(key);
    if (slice && now >= slice.resetAt && !this.pending.has(key)) {
      this.slices.delete(key); // its units died with its window
      return undefined;
    }
    return slice;
  }

  private take(slice: Slice, cost: number, limit: number, now: number): LimitDecision {
    slice.left -= cost;
    slice.lastUsed = now;
    return { allowed: true, remaining: Math.max(0, limit - slice.grantedTotal + slice.left), resetAt: slice.resetAt };
  }

  private storeKeyOf(key: string): string {
    return this.options.storeKey ? this.options.storeKey(key) : key;
  }

  private refuse(slice: Slice, limit: number): LimitDecision {
    return { allowed: false, remaining: Math.max(0, limit - slice.grantedTotal + slice.left), resetAt: slice.resetAt };
  }

  private async consumeLeasing(key: string, cost: number, limit: number): Promise<LimitDecision> {
    for (;;) {
      const pending = this.pending.get(key);
      if (pending) {
        await pending;
        const now = this.now();
        const slice = this.current(key, now);
        if (slice && slice.left >= cost) return this.take(slice, cost, limit, now);
        if (slice && now < slice.exhaustedUntil) return this.refuse(slice, limit);
        continue;
      }
      const now = this.now();
      const slice = this.current(key, now);
      if (slice && slice.left >= cost) return this.take(slice, cost, limit, now);
      const lease = this.lease(key, cost - (slice?.left ?? 0) + this.sliceOf(limit), limit, now);
      this.pending.set(key, lease);
      let reached: boolean;
      try {
        reached = await lease;
      } finally {
        this.pending.delete(key);
      }
      if (!reached) return this.fallback.consume(key, cost, limit);
      const after = this.slices.get(key)!;
      if (after.left >= cost) return this.take(after, cost, limit, this.now());
      // Not enough anywhere: what this instance holds goes back, for the other instances' requests,
      // and it refuses here without asking the store again for a moment.
      const decision = this.refuse(after, limit);
      after.exhaustedUntil = this.now() + (this.options.refusePauseMs ?? 250);
      if (after.left > 0) {
        const units = after.left;
        after.left = 0;
        after.grantedTotal -= units;
        void this.store.giveBack(this.storeKeyOf(key), after.windowStart, units).catch(() => undefined);
      }
      return decision;
    }
  }

  /** Leases units into the key's slice; false when the store could not be reached. */
  private async lease(key: string, want: number, limit: number, now: number): Promise<boolean> {
    let lease: LimitLease;
    try {
      lease = await this.store.lease(this.storeKeyOf(key), want, limit, this.options.windowMs, now);
    } catch (error) {
      if (!(error instanceof LimitStoreUnavailableError)) throw error;
      if (!this.storeFailing) this.options.onStoreFailure?.(error);
      this.storeFailing = true;
      return false;
    }
    this.storeFailing = false;
    const slice = this.slices.get(key);
    if (slice && slice.windowStart === lease.windowStart) {
      slice.left += lease.granted;
      slice.grantedTotal = lease.grantedTotal;
      slice.lastUsed = now;
    } else {
      // A new window: what was left of the old one's slice died with it.
      this.slices.set(key, { windowStart: lease.windowStart, resetAt: lease.resetAt, left: lease.granted, grantedTotal: lease.grantedTotal, lastUsed: now, exhaustedUntil: 0 });
    }
    return true;
  }

  private async giveBackIdle(idleMs = this.idleGiveBackMs): Promise<void> {
    const now = this.now();
    const returns: Promise<void>[] = [];
    for (const [key, slice] of this.slices) {
      if (this.pending.has(key)) continue;
      if (now >= slice.resetAt) {
        this.slices.delete(key);
        continue;
      }
      if (slice.left === 0 || now - slice.lastUsed < idleMs) continue;
      const units = slice.left;
      slice.left = 0;
      slice.grantedTotal -= units;
      returns.push(this.store.giveBack(this.storeKeyOf(key), slice.windowStart, units).catch(() => undefined));
    }
    await Promise.all(returns);
  }
}
