import type { Admin } from 'kafkajs';
import { BrokerUnavailableError, type ConsumedRecord, type PopOptions } from '../port.ts';
import type { FollowStart, InboxTail } from './inbox-tail.ts';
import { loadCursor, type PartitionClaim, type PopClaim, type PopCursor, type PopCursorStore } from './pop-cursor.ts';

/** Attempts of one pop against claims of other processes before it gives up (503). */
const POP_ATTEMPTS = 20;
/** Expired records claimed (as skipped) per pop at most: a claim stays a small event. */
const MAX_EXPIRED_PER_CLAIM = 1_000;
/** Topics whose cursors and offsets are read at once while following many. */
const FOLLOW_PARALLEL = 16;

/** The caller's `accept` rejected: its error is what `pop` rejects with, untouched. */
export class AcceptRejected {
  constructor(readonly error: unknown) {}
}

export interface KafkaPopsOptions {
  readonly cursors: PopCursorStore;
  readonly tail: () => Promise<InboxTail>;
  readonly withAdmin: <T>(operation: (admin: Admin) => Promise<T>) => Promise<T>;
  /** The port's name of a Kafka topic: the pop cursors are kept under it. */
  readonly portTopic: (kafkaTopic: string) => string;
}

interface Selection {
  /** What the pop hands out (and `accept` is offered). */
  readonly popped: ConsumedRecord[];
  readonly claim: PopClaim;
}

/**
 * Pops on Kafka (docs/poll-on-kafka.md): a pop selects from this process's inbox tail what the
 * topic's pop cursor does not say popped, offers it to the caller's `accept`, then claims it by
 * appending to the cursor's stream at the version it folded. Another process claimed first: the
 * cursor is read again and the pop selects (and offers) again. Records older than the topic's
 * retention are never handed out: they are claimed as skipped. One pop of a topic at a time in
 * this process.
 */
export class KafkaPops {
  private readonly cursors = new Map<string, PopCursor>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly options: KafkaPopsOptions) {}

  /**
   * Gets the tail to follow these topics (which exist) in one restart, each from its pop cursor's
   * floor, as a pop's first look would one topic at a time (Broker.follow).
   */
  async follow(topics: readonly string[]): Promise<void> {
    const source = await this.options.tail();
    const fresh = [...new Set(topics)].filter((topic) => !source.follows(topic));
    const entries: Array<readonly [string, FollowStart]> = [];
    for (let i = 0; i < fresh.length; i += FOLLOW_PARALLEL) {
      const slice = fresh.slice(i, i + FOLLOW_PARALLEL);
      entries.push(...(await Promise.all(slice.map((topic) => this.serialised(topic, () => this.startOf(topic))))));
    }
    await source.followMany(entries);
  }

  /** Pops from a Kafka topic (which exists). `retentionMs`: the topic's policy retention. */
  pop(topic: string, max: number, accept: PopOptions['accept'], retentionMs: number | undefined): Promise<ConsumedRecord[]> {
    return this.serialised(topic, () => this.popNow(topic, max, accept, retentionMs));
  }

  /**
   * Until when a pop of `topic` would select nothing from this process's tail (Broker.knownEmpty):
   * the first moment a record left for later falls due or expires (Infinity when none is left), if
   * nothing reaches the tail and nothing is forgotten meanwhile; 0 (at most `now`) when a pop would
   * select something now or this does not know (a cursor not read yet, a topic the tail does not
   * follow yet). Decided synchronously. A pop claims from the same tail, so it is as fresh. A pop in
   * flight does not make it unknown: a cursor only moves once a claim is recorded, and the tail only
   * grows, so what selects nothing now selects nothing whatever that pop does. (Session 30: it used
   * to answer "unknown" then; under 50 connections polling a key of 25 apps some pop was nearly
   * always in flight, each poll popped every topic in turn behind the others, and the pops convoyed.)
   */
  emptyUntil(topic: string, source: InboxTail, retentionMs: (topic: string) => number | undefined, now: number): number {
    const cursor = this.cursors.get(topic);
    if (cursor === undefined || !source.follows(topic)) return 0;
    return nothingSelectableUntil(source, topic, cursor, retentionMs, now);
  }

  /** The topic's pop cursor as the event store has it now (for depth). */
  freshCursor(topic: string): Promise<PopCursor> {
    return this.serialised(topic, () => this.cursorOf(topic, true));
  }

  /** Forgets the topics' cursors and tail buffers (they were deleted). */
  async forget(topics: readonly string[]): Promise<void> {
    await Promise.all(topics.map((topic) => this.serialised(topic, async () => this.cursors.delete(topic))));
  }

  private async popNow(topic: string, max: number, accept: PopOptions['accept'], retentionMs: number | undefined): Promise<ConsumedRecord[]> {
    let cursor = await this.cursorOf(topic);
    const source = await this.options.tail();
    if (!source.follows(topic)) await source.follow(...(await this.startOf(topic)));
    for (let attempt = 0; attempt < POP_ATTEMPTS; attempt++) {
      const expiredBefore = retentionMs === undefined ? undefined : Date.now() - retentionMs;
      const selection = select(source, topic, cursor, max, expiredBefore);
      if (!selection) return [];
      if (accept !== undefined && selection.popped.length > 0) {
        try {
          await accept(selection.popped);
        } catch (error) {
          throw new AcceptRejected(error);
        }
      }
      const version = await this.options.cursors.append(this.options.portTopic(topic), cursor.version, selection.claim);
      if (version === 'conflict') {
        const before = cursor;
        cursor = await this.cursorOf(topic, true); // another process popped: see what it took
        if (cursor.resetAt !== before.resetAt) {
          // The topic was deleted since this process read it: what the tail holds is gone.
          await source.unfollow([topic]);
          return [];
        }
        continue;
      }
      cursor.apply(selection.claim, version);
      for (const { partition } of selection.claim.partitions) source.drop(topic, partition, (record) => cursor.isPopped(partition, record.offset));
      return selection.popped;
    }
    throw new BrokerUnavailableError(`Pop from ${topic} gave up: other processes kept claiming first`);
  }

  /** Where a topic's tail starts: per partition, the pop cursor's floor (what is popped below it) and the topic's end now. */
  private async startOf(topic: string): Promise<readonly [string, FollowStart]> {
    const cursor = await this.cursorOf(topic);
    const floors = new Map<number, bigint>();
    const highs = new Map<number, bigint>();
    for (const { partition, high } of await this.options.withAdmin((admin) => admin.fetchTopicOffsets(topic))) {
      floors.set(partition, cursor.floor(partition));
      highs.set(partition, BigInt(high));
    }
    return [topic, { floors, highs }];
  }

  private async cursorOf(topic: string, fresh = false): Promise<PopCursor> {
    let cursor = this.cursors.get(topic);
    if (!cursor || fresh) this.cursors.set(topic, (cursor = await loadCursor(this.options.cursors, this.options.portTopic(topic))));
    return cursor;
  }

  /** One operation at a time per topic in this process (pops of one topic would claim alike). */
  private serialised<T>(topic: string, operation: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(topic) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(operation);
    this.locks.set(topic, next);
    void next.finally(() => this.locks.get(topic) === next && this.locks.delete(topic)).catch(() => undefined);
    return next;
  }
}

/** Where an unpopped record stands for a pop now: skipped as too old, handed out, or left for later. */
const standingOf = (record: ConsumedRecord, expiredBefore: number | undefined, now: number): 'expired' | 'due' | 'later' => {
  if (expiredBefore !== undefined && record.timestamp < expiredBefore) return 'expired';
  return record.dueAt === undefined || record.dueAt <= now ? 'due' : 'later';
};

/**
 * Until when `select` would find nothing (neither a record to hand out nor one to skip), without its
 * allocations: every buffered record is popped already or left for later, until the first of those
 * falls due or expires (`standingOf`'s rules); 0 when `select` would find something now. An empty
 * poll of a key of 25 apps asks it 25 times (issue 49: +31 to +39 % of CPU against one app, with
 * `select`'s arrays, its set and the buffer's filtered copy made for each topic). The retention is
 * only looked up when a record is still there.
 */
const nothingSelectableUntil = (source: InboxTail, topic: string, cursor: PopCursor, retentionMs: (topic: string) => number | undefined, now: number): number => {
  let until = Infinity;
  let looked = false;
  let retention: number | undefined;
  for (const [partition, buffer] of source.partitions(topic))
    for (const record of buffer.records) {
      if (cursor.isPopped(partition, record.offset)) continue;
      if (!looked) {
        // Once per call, at the first unpopped record (records left for later may be many).
        looked = true;
        retention = retentionMs(topic);
      }
      if (standingOf(record, retention === undefined ? undefined : now - retention, now) !== 'later') return 0;
      // Later: due at `dueAt`; expired from the first moment `timestamp < moment - retention`.
      const changesAt = Math.min(record.dueAt!, retention === undefined ? Infinity : record.timestamp + retention + 1);
      if (changesAt < until) until = changesAt;
    }
  return until;
};

/**
 * What a pop would take from the buffer: due records not popped, oldest first, at most `max`;
 * records older than `expiredBefore` and second copies of a popped id are skipped.
 */
const select = (source: InboxTail, topic: string, cursor: PopCursor, max: number, expiredBefore: number | undefined): Selection | undefined => {
  const now = Date.now();
  const candidates: ConsumedRecord[] = [];
  const skipped: ConsumedRecord[] = [];
  for (const [partition, buffer] of source.partitions(topic)) {
    source.drop(topic, partition, (record) => cursor.isPopped(partition, record.offset));
    for (const record of buffer.records) {
      const standing = standingOf(record, expiredBefore, now);
      if (standing === 'expired') {
        if (skipped.length < MAX_EXPIRED_PER_CLAIM) skipped.push(record);
      } else if (standing === 'due') candidates.push(record);
    }
  }
  candidates.sort((a, b) => a.timestamp - b.timestamp || a.partition - b.partition || Number(a.offset - b.offset));
  const popped: ConsumedRecord[] = [];
  const ids = new Set<string>();
  for (const record of candidates) {
    if (popped.length >= max) break;
    if (record.id !== undefined && (cursor.wasPopped(record.id) || ids.has(record.id))) {
      skipped.push(record);
      continue;
    }
    if (record.id !== undefined) ids.add(record.id);
    popped.push(record);
  }
  if (popped.length === 0 && skipped.length === 0) return undefined;
  const partitions = new Map<number, { popped: bigint[]; skipped: bigint[] }>();
  const entry = (partition: number) => {
    let claim = partitions.get(partition);
    if (!claim) partitions.set(partition, (claim = { popped: [], skipped: [] }));
    return claim;
  };
  for (const record of popped) entry(record.partition).popped.push(record.offset);
  for (const record of skipped) entry(record.partition).skipped.push(record.offset);
  const claim: PopClaim = {
    partitions: [...partitions].map(([partition, offsets]): PartitionClaim => ({ partition, ...offsets })),
    ids: [...ids],
  };
  return { popped, claim };
};
