import type { SeatStore } from '../../infra/limits/seats.ts';

export interface LimitDecision {
  readonly allowed: boolean;
  /** Units left in the window after this decision. */
  readonly remaining: number;
  /** Epoch ms when the window ends. */
  readonly resetAt: number;
}

/**
 * A rate limit's windows as a route sees them: `consume` takes `cost` units of the key's window
 * budget `limit` if all of them fit (a batch over the rest is refused whole), `refund` gives units
 * back after a request failed before it did anything. `RateLimiter` (apps/api/rate-limiter.ts)
 * holds the windows in its process, answering at once; `SlicedLimiter` (./sliced-limiter.ts)
 * shares them with every instance on the same store, answering at once while its slice lasts.
 */
export interface Limiter {
  consume(key: string, cost: number, limit: number): LimitDecision | Promise<LimitDecision>;
  refund(key: string, cost: number): void;
  close(): void;
}

/** Where the rate limits keep their windows (apps/limits/open-limits.ts makes them). */
export interface Limits {
  /** Whether the windows are shared with the other instances on the same store. */
  readonly shared: boolean;
  /** A limit whose windows last `windowMs`. */
  limiter(windowMs: number, evictEveryMs?: number): Limiter;
  /** Caps on what is held open at once (event streams per key and per user). */
  readonly seats: SeatStore;
  close(): Promise<void>;
}
