/**
 * Where the destructive poll of a Kafka topic stands, shared by every Relay process on the broker.
 *
 * Kafka has no destructive read, so a pop is a claim: "these offsets of this topic are popped".
 * Claims are appended to one event-store stream per topic with the stream version the claimer
 * last saw (optimistic concurrency), so two processes can never claim the same record: the
 * second append fails, and its claimer reloads the cursor and tries again. Deleting the topic
 * appends a reset: the claims before it are about records that are gone, and a topic created again
 * under the same name starts at offset 0. See docs/poll-on-kafka.md.
 */

export interface PartitionClaim {
  readonly partition: number;
  /** Offsets handed to the caller. */
  readonly popped: readonly bigint[];
  /**
   * Offsets consumed without being handed out: a second record with an id already popped, or a
   * record older than its topic's retention.
   */
  readonly skipped: readonly bigint[];
}

export interface PopClaim {
  readonly partitions: readonly PartitionClaim[];
  /** Idempotency ids of the popped records (the message ids). */
  readonly ids: readonly string[];
}

interface PartitionCursor {
  /** Every offset below this is popped (or skipped). */
  floor: bigint;
  /** Popped offsets at or above `floor` (a record left behind, e.g. not due yet, holds the floor). */
  readonly above: Set<bigint>;
}

/** How many recent ids a cursor remembers to drop a record the publisher sent twice. */
export const RECENT_IDS = 10_000;

export class PopCursor {
  private readonly partitions = new Map<number, PartitionCursor>();
  private readonly recentIds = new Set<string>();

  constructor(
    /** Stream version the cursor was folded up to (0n: nothing was ever popped). */
    public version = 0n,
    /** Stream version of the last reset (the topic was deleted then); 0n: never deleted. */
    public readonly resetAt = 0n,
  ) {}

  isPopped(partition: number, offset: bigint): boolean {
    const cursor = this.partitions.get(partition);
    if (!cursor) return false;
    return offset < cursor.floor || cursor.above.has(offset);
  }

  /** Lowest offset of the partition that may still be unpopped. */
  floor(partition: number): bigint {
    return this.partitions.get(partition)?.floor ?? 0n;
  }

  /** Popped offsets at or above the floor of the partition. */
  poppedAboveFloor(partition: number): number {
    return this.partitions.get(partition)?.above.size ?? 0;
  }

  /** Popped offsets at or above `from` (which is at or above the floor). */
  poppedFrom(partition: number, from: bigint): number {
    const cursor = this.partitions.get(partition);
    if (!cursor) return 0;
    let count = 0;
    for (const offset of cursor.above) if (offset >= from) count++;
    return count;
  }

  wasPopped(id: string): boolean {
    return this.recentIds.has(id);
  }

  /** Folds one claim (in stream order) into the cursor. */
  apply(claim: PopClaim, version: bigint): void {
    for (const { partition, popped, skipped } of claim.partitions) {
      let cursor = this.partitions.get(partition);
      if (!cursor) this.partitions.set(partition, (cursor = { floor: 0n, above: new Set() }));
      for (const offset of [...popped, ...skipped]) if (offset >= cursor.floor) cursor.above.add(offset);
      while (cursor.above.delete(cursor.floor)) cursor.floor++;
    }
    for (const id of claim.ids) {
      this.recentIds.delete(id);
      this.recentIds.add(id);
    }
    for (const id of this.recentIds) {
      if (this.recentIds.size <= RECENT_IDS) break;
      this.recentIds.delete(id);
    }
    this.version = version;
  }
}

/** One entry of a topic's claims: a claim, or the reset that deleting the topic wrote. */
export type CursorEntry = { readonly version: bigint; readonly claim: PopClaim } | { readonly version: bigint; readonly reset: true };

/** Where claims are kept: appended with optimistic concurrency, read back in order. */
export interface PopCursorStore {
  /** Every entry of the topic, in order, with the stream version after the last one. */
  load(topic: string): Promise<{ version: bigint; claims: CursorEntry[] }>;
  /** Appends the claim if the topic's stream is still at `expectedVersion`: its new version, or 'conflict'. */
  append(topic: string, expectedVersion: bigint, claim: PopClaim): Promise<bigint | 'conflict'>;
  /** Says the topic was deleted: whatever was claimed before, nothing of the topic is popped now. */
  reset(topic: string): Promise<void>;
}

export const loadCursor = async (store: PopCursorStore, topic: string): Promise<PopCursor> => {
  const { version, claims } = await store.load(topic);
  let cursor = new PopCursor();
  for (const entry of claims) {
    if ('reset' in entry) cursor = new PopCursor(entry.version, entry.version);
    else cursor.apply(entry.claim, entry.version);
  }
  cursor.version = version;
  return cursor;
};
