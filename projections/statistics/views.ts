import { windowBuckets, TIERS, type StatisticsWindow } from '../../domain/statistics/buckets.ts';
import { FIGURES, zeroCounts, type Counts, type Figure, type Gauges } from '../../domain/statistics/tally.ts';
import type { Counter } from './counter.ts';

/** A window's totals of the bucket figures, and the gauges now. */
export type Totals = Counts & Gauges;

/** Totals and, per figure, one value per bucket of the window (oldest first). */
export interface Breakdown {
  readonly totals: Totals;
  readonly series: Readonly<Record<Figure, number[]>>;
}

/** The statistics of an app, or of all of a user's apps, over a window. */
export interface StatisticsView {
  readonly window: StatisticsWindow;
  /** The width of a bucket (60,000 for the hour, 300,000 for the day). */
  readonly bucketMs: number;
  /** Start of the first bucket and end (exclusive) of the last; bucket i starts at from + i × bucketMs. */
  readonly from: string;
  readonly to: string;
  /** Every messenger together. */
  readonly total: Breakdown;
  /** Per messenger that has statistics in the scope (recent traffic, or messages waiting). */
  readonly byMessenger: Readonly<Record<string, Breakdown>>;
}

/** A user's statistics: all apps together and per messenger, and the totals of each app. */
export interface UserStatisticsView extends StatisticsView {
  /** Per app of the user that has statistics: its totals over the window. */
  readonly apps: Readonly<Record<string, Totals>>;
}

const F = FIGURES.length;

class BreakdownSum {
  readonly counts = zeroCounts();
  waiting = 0;
  retrying = 0;
  readonly series: Float64Array;

  constructor(readonly buckets: number) {
    this.series = new Float64Array(buckets * F);
  }

  toBreakdown(): Breakdown {
    const series = {} as Record<Figure, number[]>;
    FIGURES.forEach((figure, f) => {
      const values = new Array<number>(this.buckets);
      for (let i = 0; i < this.buckets; i++) values[i] = this.series[i * F + f]!;
      series[figure] = values;
    });
    // A gauge below zero would be a history the statistics cannot explain: shown as none.
    return { totals: { ...this.counts, waiting: Math.max(0, this.waiting), retrying: Math.max(0, this.retrying) }, series };
  }
}

/** Adds one counter's window to sums; returns its own totals (for the per-app list). */
const addCounter = (counter: Counter, window: ReturnType<typeof windowBuckets>, tierIndex: number, sums: BreakdownSum[]): Totals => {
  const own = zeroCounts();
  const list = counter.tiers[tierIndex];
  if (list) {
    const last = window.first + window.count - 1;
    for (let index = 0; index < list.size; index++) {
      const bucket = list.stamps[index]!;
      if (bucket < window.first || bucket > last) continue;
      const i = bucket - window.first;
      const offset = index * F;
      for (let f = 0; f < F; f++) {
        const n = list.counts[offset + f]!;
        if (n === 0) continue;
        own[FIGURES[f]!] += n;
        for (const sum of sums) sum.series[i * F + f] = sum.series[i * F + f]! + n;
      }
    }
  }
  for (const sum of sums) {
    for (const figure of FIGURES) sum.counts[figure] += own[figure];
    sum.waiting += counter.waiting;
    sum.retrying += counter.retrying;
  }
  return { ...own, waiting: Math.max(0, counter.waiting), retrying: Math.max(0, counter.retrying) };
};

/**
 * Sums the counters of a scope (one app's, or every app's of a user) over a window at `nowMs`:
 * a read of at most (buckets × figures) numbers per counter, whatever the traffic was.
 */
export const viewOf = (counters: Iterable<Counter>, window: StatisticsWindow, nowMs: number): { view: StatisticsView; perApp: Map<string, Totals> } => {
  const buckets = windowBuckets(window, nowMs);
  const tierIndex = TIERS.indexOf(buckets.tier);
  const total = new BreakdownSum(buckets.count);
  const byMessenger = new Map<string, BreakdownSum>();
  const perApp = new Map<string, Totals>();
  for (const counter of counters) {
    let messenger = byMessenger.get(counter.messenger);
    if (!messenger) byMessenger.set(counter.messenger, (messenger = new BreakdownSum(buckets.count)));
    const own = addCounter(counter, buckets, tierIndex, [total, messenger]);
    const app = perApp.get(counter.appId);
    if (!app) perApp.set(counter.appId, own);
    else for (const key of Object.keys(own) as Array<keyof Totals>) app[key] += own[key];
  }
  return {
    view: {
      window,
      bucketMs: buckets.tier.widthMs,
      from: new Date(buckets.fromMs).toISOString(),
      to: new Date(buckets.toMs).toISOString(),
      total: total.toBreakdown(),
      byMessenger: Object.fromEntries([...byMessenger].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, sum]) => [name, sum.toBreakdown()])),
    },
    perApp,
  };
};
