/**
 * The time buckets of Relay's statistics (projections/statistics): two tiers of fixed-width
 * buckets, each keeping a fixed number of consecutive buckets that end at the bucket of the newest
 * counted event (the statistics' clock, taken from the events, so that a rebuild from event 0 gives
 * the same buckets as the live read model). Older buckets are dropped.
 *
 * - `minute`: 1-minute buckets, the last 64 kept; "the last hour" reads 60 of them.
 * - `fiveMinutes`: 5-minute buckets, the last 300 kept (25 hours); "the last day" reads 288.
 *
 * A window is the bucket holding `now` and the buckets before it: the last hour is the current
 * minute and the 59 before it, the last day the current 5 minutes and the 287 before them. The
 * few buckets kept beyond a window leave room for a `now` a little ahead of the newest event and
 * for events recorded a little out of order (another instance's clock).
 */

export interface Tier {
  readonly name: 'minute' | 'fiveMinutes';
  readonly widthMs: number;
  /** How many consecutive buckets are kept, the newest event's included. */
  readonly kept: number;
}

export const MINUTES: Tier = { name: 'minute', widthMs: 60_000, kept: 64 };
export const FIVE_MINUTES: Tier = { name: 'fiveMinutes', widthMs: 300_000, kept: 300 };
export const TIERS: readonly Tier[] = [MINUTES, FIVE_MINUTES];

export const WINDOWS = ['hour', 'day'] as const;
export type StatisticsWindow = (typeof WINDOWS)[number];
export const isStatisticsWindow = (value: unknown): value is StatisticsWindow => typeof value === 'string' && (WINDOWS as readonly string[]).includes(value);

/** Which tier answers a window, and with how many of its buckets (the current one included). */
export const WINDOW_LAYOUT: Readonly<Record<StatisticsWindow, { readonly tier: Tier; readonly buckets: number }>> = {
  hour: { tier: MINUTES, buckets: 60 },
  day: { tier: FIVE_MINUTES, buckets: 288 },
};

/** The bucket (its number since the epoch) that holds the instant `atMs`. */
export const bucketOf = (atMs: number, tier: Tier): number => Math.floor(atMs / tier.widthMs);

/** When a bucket starts (epoch ms). */
export const bucketStart = (bucket: number, tier: Tier): number => bucket * tier.widthMs;

/** The oldest bucket a tier keeps while the newest counted event is at `latestMs`. */
export const oldestKept = (latestMs: number, tier: Tier): number => bucketOf(latestMs, tier) - tier.kept + 1;

/** Whether a tier keeps `bucket` while the newest counted event is at `latestMs`. */
export const isKept = (bucket: number, latestMs: number, tier: Tier): boolean => bucket >= oldestKept(latestMs, tier) && bucket <= bucketOf(latestMs, tier);

export interface WindowBuckets {
  readonly tier: Tier;
  /** The first and last bucket of the window (the last holds `now`). */
  readonly first: number;
  readonly last: number;
  readonly count: number;
  /** Start of the first bucket and end (exclusive) of the last, epoch ms. */
  readonly fromMs: number;
  readonly toMs: number;
}

/** The buckets that answer a window at `nowMs`. */
export const windowBuckets = (window: StatisticsWindow, nowMs: number): WindowBuckets => {
  const { tier, buckets } = WINDOW_LAYOUT[window];
  const last = bucketOf(nowMs, tier);
  const first = last - buckets + 1;
  return { tier, first, last, count: buckets, fromMs: bucketStart(first, tier), toMs: bucketStart(last + 1, tier) };
};
