/**
 * The LimitStore port: the windows of Relay's rate limits, shared by every instance that uses the
 * same store. A window of a key opens at its first lease and lasts `windowMs`; the store counts
 * the units it has handed out in it (`granted`), never more than the limit. Instances lease slices
 * of a window's budget, spend them without asking the store again, and give back what they did not
 * spend (apps/limits/sliced-limiter.ts): the store is asked once per slice, not once per request.
 *
 * Adapters: in memory (one process: the embedded default) and PostgreSQL (every instance of a
 * deployment on it). A store that cannot be reached rejects with LimitStoreUnavailableError.
 */
export interface LimitLease {
  /** Units this lease handed out: between 0 and what was asked. */
  readonly granted: number;
  /** Units handed out in the window so far, this lease's included. */
  readonly grantedTotal: number;
  /** When the window began and ends (epoch ms). */
  readonly windowStart: number;
  readonly resetAt: number;
}

export interface LimitStore {
  /**
   * Hands out up to `want` units of the window of `key` whose budget is `limit`, opening a new
   * window at `now` when none is open (or the last one ended).
   */
  lease(key: string, want: number, limit: number, windowMs: number, now: number): Promise<LimitLease>;
  /** Takes back `units` handed out in the window that began at `windowStart`; nothing when that window is over. */
  giveBack(key: string, windowStart: number, units: number): Promise<void>;
  /** Forgets windows that ended before `now`; resolves with how many. */
  evict(now: number): Promise<number>;
  close(): Promise<void>;
}

export class LimitStoreUnavailableError extends Error {
  override readonly name = 'LimitStoreUnavailableError';
}
