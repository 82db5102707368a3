import { oldestKept, TIERS, bucketOf, type Tier } from '../../domain/statistics/buckets.ts';
import { FIGURES, type Counts } from '../../domain/statistics/tally.ts';

const F = FIGURES.length;
/** The first capacity of a tier's buckets: most app-messengers count in one or two buckets a tier. */
const FIRST_CAPACITY = 2;

/** A bucket as a snapshot holds it: its number, then one count per figure (FIGURES' order). */
export type StoredBucket = number[];

/**
 * One tier's buckets of one app-messenger that hold counts, oldest first: bucket numbers in
 * `stamps[0 … size)`, their counts in `counts` (F per bucket, FIGURES' order). Sparse: it holds only
 * the buckets that counted something, in arrays grown by doubling up to the tier's `kept` (session
 * 30: a fixed ring of every slot cost about 10 KB per app-messenger with any recent traffic, 150 MB
 * for the 15,000 app-messengers of 5,000 apps with a burst waiting; most of those slots were empty).
 */
export class BucketList {
  stamps: Int32Array;
  counts: Uint32Array;
  size = 0;

  constructor(readonly tier: Tier) {
    this.stamps = new Int32Array(FIRST_CAPACITY);
    this.counts = new Uint32Array(FIRST_CAPACITY * F);
  }

  /**
   * Adds counts to a bucket (the caller checked that the tier keeps it), first dropping the buckets
   * older than `oldest` when the bucket is new to the list.
   */
  add(bucket: number, counts: Partial<Counts>, oldest: number): void {
    let index = this.indexOf(bucket);
    if (index < 0) {
      this.dropBefore(oldest);
      index = this.insert(bucket);
    }
    const base = index * F;
    for (let f = 0; f < F; f++) {
      const n = counts[FIGURES[f]!];
      if (n) this.counts[base + f] = this.counts[base + f]! + n;
    }
  }

  /** Whether the list holds a bucket from `oldest` on. */
  holdsFrom(oldest: number): boolean {
    return this.size > 0 && this.stamps[this.size - 1]! >= oldest;
  }

  /** The buckets from `oldest` to `newest` it holds, oldest first. */
  stored(oldest: number, newest: number): StoredBucket[] {
    const out: StoredBucket[] = [];
    for (let i = 0; i < this.size; i++) {
      const bucket = this.stamps[i]!;
      if (bucket < oldest || bucket > newest) continue;
      out.push([bucket, ...this.counts.subarray(i * F, i * F + F)]);
    }
    return out;
  }

  /** Drops the buckets older than `oldest`, and gives back room the rest no longer needs. */
  dropBefore(oldest: number): void {
    let drop = 0;
    while (drop < this.size && this.stamps[drop]! < oldest) drop++;
    if (drop === 0) return;
    this.stamps.copyWithin(0, drop, this.size);
    this.counts.copyWithin(0, drop * F, this.size * F);
    this.size -= drop;
    if (this.size <= this.stamps.length / 4 && this.stamps.length > FIRST_CAPACITY) this.resize(Math.max(FIRST_CAPACITY, this.size * 2));
  }

  /** The index of a bucket, or -1: the newest is looked at first (where events mostly land). */
  private indexOf(bucket: number): number {
    let high = this.size - 1;
    if (high < 0) return -1;
    if (this.stamps[high] === bucket) return high;
    let low = 0;
    while (low <= high) {
      const mid = (low + high) >> 1;
      const stamp = this.stamps[mid]!;
      if (stamp === bucket) return mid;
      if (stamp < bucket) low = mid + 1;
      else high = mid - 1;
    }
    return -1;
  }

  /** Makes room for a new bucket in order, with zero counts; returns its index. */
  private insert(bucket: number): number {
    if (this.size === this.stamps.length) {
      if (this.size < this.tier.kept) this.resize(Math.min(this.tier.kept, this.size * 2));
      else this.dropBefore(this.stamps[0]! + 1); // full of kept buckets (cannot happen while the caller drops the old ones): the oldest goes
    }
    let index = this.size;
    while (index > 0 && this.stamps[index - 1]! > bucket) index--;
    this.stamps.copyWithin(index + 1, index, this.size);
    this.counts.copyWithin((index + 1) * F, index * F, this.size * F);
    this.stamps[index] = bucket;
    this.counts.fill(0, index * F, index * F + F);
    this.size++;
    return index;
  }

  private resize(capacity: number): void {
    const stamps = new Int32Array(capacity);
    const counts = new Uint32Array(capacity * F);
    stamps.set(this.stamps.subarray(0, this.size));
    counts.set(this.counts.subarray(0, this.size * F));
    this.stamps = stamps;
    this.counts = counts;
  }
}

/** The statistics of one app-messenger: its gauges and, while it has recent traffic, its buckets per tier. */
export class Counter {
  waiting = 0;
  retrying = 0;
  /** By tier, in TIERS' order; undefined while the tier holds nothing recent (allocated on first use). */
  readonly tiers: Array<BucketList | undefined> = TIERS.map(() => undefined);

  constructor(
    readonly appId: string,
    readonly messenger: string,
  ) {}

  /** Counts at `atMs` in every tier that keeps its bucket while the newest event is at `latestMs`. */
  add(atMs: number, counts: Partial<Counts>, latestMs: number): void {
    TIERS.forEach((tier, t) => {
      const bucket = bucketOf(atMs, tier);
      const oldest = oldestKept(latestMs, tier);
      if (bucket < oldest) return; // older than the tier keeps: dropped
      const list = (this.tiers[t] ??= new BucketList(tier));
      list.add(bucket, counts, oldest);
    });
  }

  /** The newest bucket a tier holds, or undefined when it holds none. */
  newest(tierIndex: number): number | undefined {
    const list = this.tiers[tierIndex];
    return list && list.size > 0 ? list.stamps[list.size - 1] : undefined;
  }

  /** Whether it holds nothing at all: no bucket, nothing waiting. */
  get empty(): boolean {
    return this.waiting === 0 && this.retrying === 0 && this.tiers.every((list) => list === undefined);
  }
}
