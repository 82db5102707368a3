/**
 * Keys in the order they were last touched, the one touched longest ago first, kept without moving
 * a Map entry per touch. (Session 30: a Map re-ordered by `delete(key)` then `set(key)` on every
 * touch cost 10-25 µs a touch with thousands of keys: V8 keeps each deleted entry in its bucket's
 * chain until the table is rebuilt, so one key re-inserted again and again made its chain, and every
 * look-up of it, longer. The message log's fold was 90 % of a busy pipeline thread at 10,000 tenants.)
 *
 * Each touch appends (key, stamp) to a queue and updates the key's stamp in place; an entry whose
 * key was touched again since, or forgotten, is stale and skipped. The queue is compacted when its
 * entries, those `oldest` has passed included, are more than twice the keys remembered (session 31:
 * counting only those not passed yet let the passed ones, and the forgotten keys they hold, pile up
 * for as long as expiry kept pace with touches: 1 M entries and 60 MB after replaying a year of
 * statistics).
 */
export class Recency<K> {
  /** The latest stamp of each key remembered. */
  private readonly latest = new Map<K, number>();
  private queue: Array<readonly [K, number]> = [];
  private head = 0;
  private sequence = 0;

  /** Moves a key last. `stamp`: what it is ordered by (default one more than the last touch); a key's stamps must grow. */
  touch(key: K, stamp: number = ++this.sequence): void {
    this.latest.set(key, stamp);
    this.queue.push([key, stamp]);
    if (this.queue.length > 2 * this.latest.size + 1024) this.compact();
  }

  /** The stamp of a key's latest touch, if it is remembered. */
  stampOf(key: K): number | undefined {
    return this.latest.get(key);
  }

  forget(key: K): void {
    this.latest.delete(key);
  }

  clear(): void {
    this.latest.clear();
    this.queue = [];
    this.head = 0;
  }

  /** The key touched longest ago that is remembered, with the stamp of that touch. */
  oldest(): readonly [K, number] | undefined {
    while (this.head < this.queue.length) {
      const entry = this.queue[this.head]!;
      if (this.latest.get(entry[0]) === entry[1]) return entry;
      this.head++;
    }
    return undefined;
  }

  /** The keys remembered, the one touched longest ago first. */
  inOrder(): K[] {
    this.compact();
    return this.queue.map(([key]) => key);
  }

  /** How many entries the queue holds, stale ones included (bounded by twice the keys remembered, plus 1,024). */
  get queued(): number {
    return this.queue.length;
  }

  /** The keys remembered, in no particular order. */
  keys(): IterableIterator<K> {
    return this.latest.keys();
  }

  private compact(): void {
    this.queue = this.queue.slice(this.head).filter(([key, stamp]) => this.latest.get(key) === stamp);
    this.head = 0;
  }
}
