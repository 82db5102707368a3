/**
 * Apps in the order of their latest message, the one quiet the longest first, kept without moving
 * a Map entry per message. (Session 30: a Map re-ordered by `delete(key)` then `set(key)` for every
 * message cost 10-25 µs a message with thousands of apps: V8 keeps each deleted entry in its
 * bucket's chain until the table is rebuilt, so the one key re-inserted again and again made its
 * chain, and every look-up of it, longer: most of a busy pipeline thread at 10,000 tenants.)
 *
 * Each touch appends (app, sequence) to a queue; an entry whose app was touched again since, or
 * forgotten, is stale and skipped. The queue is compacted when stale entries outnumber live ones.
 */
export class Recency {
  /** The latest touch of each app remembered. */
  private readonly latest = new Map<string, number>();
  private queue: Array<readonly [string, number]> = [];
  private head = 0;
  private sequence = 0;

  touch(appId: string): void {
    const at = ++this.sequence;
    this.latest.set(appId, at);
    this.queue.push([appId, at]);
    if (this.queue.length - this.head > 2 * this.latest.size + 1024) this.compact();
  }

  forget(appId: string): void {
    this.latest.delete(appId);
  }

  clear(): void {
    this.latest.clear();
    this.queue = [];
    this.head = 0;
  }

  /** The app touched longest ago that is remembered. */
  oldest(): string | undefined {
    while (this.head < this.queue.length) {
      const [appId, at] = this.queue[this.head]!;
      if (this.latest.get(appId) === at) return appId;
      this.head++;
    }
    return undefined;
  }

  /** The apps remembered, the one touched longest ago first. */
  inOrder(): string[] {
    this.compact();
    return this.queue.map(([appId]) => appId);
  }

  /** The apps remembered, in no particular order. */
  apps(): IterableIterator<string> {
    return this.latest.keys();
  }

  private compact(): void {
    this.queue = this.queue.slice(this.head).filter(([appId, at]) => this.latest.get(appId) === at);
    this.head = 0;
  }
}
