/**
 * Where the destructive poll of a Kafka topic stands, shared by every Relay process on the broker.
 *
 * Kafka has no destructive read, so a pop is a claim: "these offsets of this topic are popped".
 * Claims are appended to one event-store stream per topic with the stream version the claimer
 * last saw (optimistic concurrency), so two processes can never claim the same record: the
 * second append fails, and its claimer reloads the cursor and tries again. See
 * docs/poll-on-kafka.md.
 */

export interface PartitionClaim {
  readonly partition: number;
  /** Offsets handed to the caller. */
  readonly popped: readonly bigint[];
  /** Offsets consumed without being handed out: a second record with an id already popped. */
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

/** Where claims are kept: appended with optimistic concurrency, read back in order. */
export interface PopCursorStore {
  /** Every claim of the topic, in order, with the stream version after the last one. */
  load(topic: string): Promise<{ version: bigint; claims: Array<{ claim: PopClaim; version: bigint }> }>;
  /** Appends the claim if the topic's stream is still at `expectedVersion`: its new version, or 'conflict'. */
  append(topic: string, expectedVersion: bigint, claim: PopClaim): Promise<bigint | 'conflict'>;
}

export const loadCursor = async (store: PopCursorStore, topic: string): Promise<PopCursor> => {
  const { version, claims } = await store.load(topic);
  const cursor = new PopCursor();
  for (const { claim, version: at } of claims) cursor.apply(claim, at);
  cursor.version = version;
  return cursor;
};
