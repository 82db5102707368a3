/**
 * The SeatStore port: caps on things held open at once (event streams per key and per user),
 * shared by every instance on the same store. A seat is taken while fewer than `cap` of its group
 * are held, and held until it is released, or until its instance stops renewing it (an instance
 * that dies frees its seats within the store's `ttlMs`).
 *
 * Adapters: in memory (one process: the embedded default) and PostgreSQL (a deployment's instances).
 */
export interface SeatStore {
  /** A seat of `group` if fewer than `cap` are held, else undefined. */
  take(group: string, cap: number): Promise<string | undefined>;
  release(group: string, seat: string): Promise<void>;
  close(): Promise<void>;
}

/** Seats in this process's memory. */
export class MemorySeatStore implements SeatStore {
  private readonly groups = new Map<string, Set<string>>();
  private next = 0;

  async take(group: string, cap: number): Promise<string | undefined> {
    const held = this.groups.get(group) ?? new Set<string>();
    if (held.size >= cap) return undefined;
    const seat = String(++this.next);
    held.add(seat);
    this.groups.set(group, held);
    return seat;
  }

  async release(group: string, seat: string): Promise<void> {
    const held = this.groups.get(group);
    if (!held) return;
    held.delete(seat);
    if (held.size === 0) this.groups.delete(group);
  }

  async close(): Promise<void> {
    this.groups.clear();
  }
}
