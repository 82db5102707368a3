import { oldestKept, slotOf, TIERS, bucketOf, type Tier } from '../../domain/statistics/buckets.ts';
import { FIGURES, type Counts } from '../../domain/statistics/tally.ts';

const F = FIGURES.length;
const EMPTY = -1;

/** A bucket as a snapshot holds it: its number, then one count per figure (FIGURES' order). */
export type StoredBucket = number[];

/**
 * One tier's buckets of one app-messenger: a ring of `tier.kept` slots, each holding the number of
 * the bucket it counts (or EMPTY) and its counts. A bucket and the one `kept` later share a slot:
 * writing the newer one clears the older. Its size is fixed whatever the traffic.
 */
export class Ring {
  readonly stamps: Int32Array;
  readonly counts: Uint32Array;

  constructor(readonly tier: Tier) {
    this.stamps = new Int32Array(tier.kept).fill(EMPTY);
    this.counts = new Uint32Array(tier.kept * F);
  }

  /** Adds counts to a bucket (the caller checked that the tier keeps it). */
  add(bucket: number, counts: Partial<Counts>): void {
    const slot = slotOf(bucket, this.tier);
    const base = slot * F;
    if (this.stamps[slot] !== bucket) {
      this.stamps[slot] = bucket;
      this.counts.fill(0, base, base + F);
    }
    for (let f = 0; f < F; f++) {
      const n = counts[FIGURES[f]!];
      if (n) this.counts[base + f] = this.counts[base + f]! + n;
    }
  }

  /** Where a bucket's counts start in `counts`, or -1 when the ring does not hold it. */
  offsetOf(bucket: number): number {
    const slot = slotOf(bucket, this.tier);
    return this.stamps[slot] === bucket ? slot * F : -1;
  }

  /** Whether the ring holds a bucket from `oldest` on. */
  holdsFrom(oldest: number): boolean {
    for (const stamp of this.stamps) if (stamp >= oldest) return true;
    return false;
  }

  /** The buckets from `oldest` to `newest` it holds, oldest first. */
  stored(oldest: number, newest: number): StoredBucket[] {
    const out: StoredBucket[] = [];
    for (let slot = 0; slot < this.stamps.length; slot++) {
      const bucket = this.stamps[slot]!;
      if (bucket === EMPTY || bucket < oldest || bucket > newest) continue;
      out.push([bucket, ...this.counts.subarray(slot * F, slot * F + F)]);
    }
    return out.sort((a, b) => a[0]! - b[0]!);
  }
}

/** The statistics of one app-messenger: its gauges and, while it has recent traffic, one ring per tier. */
export class Counter {
  waiting = 0;
  retrying = 0;
  /** By tier, in TIERS' order; undefined while the tier holds nothing recent (allocated on first use). */
  readonly rings: Array<Ring | undefined> = TIERS.map(() => undefined);

  constructor(
    readonly appId: string,
    readonly messenger: string,
  ) {}

  /** Counts at `atMs` in every tier that keeps its bucket while the newest event is at `latestMs`. */
  add(atMs: number, counts: Partial<Counts>, latestMs: number): void {
    TIERS.forEach((tier, t) => {
      const bucket = bucketOf(atMs, tier);
      if (bucket < oldestKept(latestMs, tier)) return; // older than the tier keeps: dropped
      const ring = (this.rings[t] ??= new Ring(tier));
      ring.add(bucket, counts);
    });
  }

  /** Frees the rings that hold nothing the tiers still keep; says whether the counter holds nothing at all. */
  prune(latestMs: number): boolean {
    TIERS.forEach((tier, t) => {
      if (this.rings[t] && !this.rings[t].holdsFrom(oldestKept(latestMs, tier))) this.rings[t] = undefined;
    });
    return this.waiting === 0 && this.retrying === 0 && this.rings.every((ring) => ring === undefined);
  }
}
