import type { FetchTopic } from './kafkajs-wire.ts';

/**
 * An incremental fetch session (Kafka's KIP-227) with one broker, for the partitions the inbox
 * tail fetches there (inbox-tail.ts): the rules of the broker's `FetchSession.scala`
 * (apache/kafka core/src/main/scala/kafka/server/FetchSession.scala), as the Java client's
 * `FetchSessionHandler` follows them (clients/src/main/java/org/apache/kafka/clients/FetchSessionHandler.java):
 * - a full fetch with epoch 0 opens a session; the `session_id` it carries (the last one) is closed
 *   first; an answer with `session_id` 0 means the broker keeps no session (its cache is full), so
 *   the next fetch is full again and asks anew;
 * - each incremental fetch carries the session's id and the next epoch (1, 2, ... wrapping to 1);
 * - the broker holds each partition's fetch offset: a partition left out keeps it, so a partition
 *   is named exactly when it is new to the session or its offset moved, and one no longer fetched
 *   (paused, moved to another leader, deleted) is named among the forgotten;
 * - an answer with a top-level error (`FETCH_SESSION_ID_NOT_FOUND`, `INVALID_FETCH_SESSION_EPOCH`,
 *   or any other) or a failed request ends the session; the next fetch is full. An error that is not
 *   about sessions has fetches go without one (`session_id` 0, epoch -1) for `SESSION_PAUSE_MS`.
 * So an idle fetch names nothing and is answered with nothing, however many partitions it holds.
 */

/** A partition the tail fetches: its position (the offset after what it fetched) and whether its buffer is full. */
export interface SessionPartition {
  readonly topic: string;
  readonly partition: number;
  readonly next: bigint;
  readonly paused: boolean;
}

/** The session fields and partitions of one fetch. */
export interface FetchPlan<P extends SessionPartition> {
  readonly sessionId: number;
  readonly sessionEpoch: number;
  readonly topics: FetchTopic[];
  readonly forgottenTopics: Array<{ topic: string; partitions: number[] }>;
  /** Named in the fetch, with the offset named. */
  readonly sent: ReadonlyArray<readonly [P, bigint]>;
  readonly forgotten: readonly P[];
  /** Held under an object the tail no longer reads, and named again under its new one. */
  readonly replaced: readonly P[];
  readonly full: boolean;
  readonly sessionless: boolean;
}

/** The highest epoch (a signed 32-bit integer). */
const MAX_EPOCH = 2_147_483_647;
/** The epoch of a fetch without a session. */
const FINAL_EPOCH = -1;
/** How long fetches go without a session after the broker answered one with an error it did not explain. */
export const SESSION_PAUSE_MS = 30_000;
/** The top-level errors that only say the session is gone. */
const SESSION_ERRORS = new Set([70 /* FETCH_SESSION_ID_NOT_FOUND */, 71 /* INVALID_FETCH_SESSION_EPOCH */]);
/** The lowest Fetch version with sessions. */
export const FIRST_SESSION_VERSION = 7;
/** The most a fetch asks of one partition (kafkajs's consumer's default). */
export const MAX_BYTES_PER_PARTITION = 1_048_576;

const keyOf = (p: SessionPartition): string => `${p.topic}\u0000${p.partition}`;

/** The epoch after this one (the broker's `nextEpoch`: after 2^31 - 1 comes 1; 0 opens a session). */
export const nextEpoch = (epoch: number): number => (epoch >= MAX_EPOCH ? 1 : epoch + 1);

export class FetchSession<P extends SessionPartition> {
  private id = 0;
  /** The epoch of the next fetch: 0 for a full one. */
  private epoch = 0;
  private offUntil = 0;
  /** What the broker's session holds: each partition's fetch offset. */
  private held = new Map<P, bigint>();

  /**
   * The next fetch of `members` (the partitions this broker leads that the tail reads; paused ones
   * are not fetched). `version` is the Fetch version the broker speaks.
   */
  plan(members: ReadonlySet<P>, version: number, now: number): FetchPlan<P> {
    const sessionless = version < FIRST_SESSION_VERSION || now < this.offUntil;
    const full = sessionless || this.epoch === 0;
    const sent: Array<readonly [P, bigint]> = [];
    const forgotten: P[] = [];
    const replaced: P[] = [];
    for (const p of members) if (!p.paused && (full || this.held.get(p) !== p.next)) sent.push([p, p.next]);
    if (!full) {
      // A partition named again under a new object (its topic deleted and made anew) is not
      // forgotten too: the broker applies the forgotten after the named, and would drop it.
      let named: Set<string> | undefined;
      for (const p of this.held.keys()) {
        if (!p.paused && members.has(p)) continue;
        named ??= new Set(sent.map(([q]) => keyOf(q)));
        (named.has(keyOf(p)) ? replaced : forgotten).push(p);
      }
    }
    return {
      sessionId: sessionless ? 0 : this.id,
      sessionEpoch: sessionless ? FINAL_EPOCH : this.epoch,
      topics: byTopic(sent, ([p, offset]) => ({ partition: p.partition, fetchOffset: String(offset), maxBytes: MAX_BYTES_PER_PARTITION })),
      forgottenTopics: byTopic(forgotten.map((p) => [p] as const), ([p]) => p.partition),
      sent,
      forgotten,
      replaced,
      full,
      sessionless,
    };
  }

  /** The broker answered `plan` with this top-level error and session id. */
  answered(plan: FetchPlan<P>, errorCode: number, sessionId: number, now: number): void {
    if (plan.sessionless) return void this.held.clear();
    if (errorCode !== 0) {
      // The session is gone (evicted, or an epoch the broker did not expect), or the broker would not keep one.
      this.epoch = 0;
      this.held.clear();
      if (!SESSION_ERRORS.has(errorCode)) this.offUntil = now + SESSION_PAUSE_MS;
      return;
    }
    if (plan.full) {
      this.id = sessionId;
      this.epoch = sessionId === 0 ? 0 : 1;
      this.held = new Map(plan.sent);
      return;
    }
    this.epoch = nextEpoch(this.epoch);
    for (const [p, offset] of plan.sent) this.held.set(p, offset);
    for (const p of plan.forgotten) this.held.delete(p);
    for (const p of plan.replaced) this.held.delete(p);
  }

  /** The fetch failed: the broker may or may not have taken its epoch, so the next one is full. */
  failed(): void {
    this.epoch = 0;
    this.held.clear();
  }
}

/** Groups partitions by topic, as the request writes them. */
const byTopic = <E extends readonly [SessionPartition, ...unknown[]], V>(entries: readonly E[], value: (entry: E) => V): Array<{ topic: string; partitions: V[] }> => {
  const topics = new Map<string, V[]>();
  for (const entry of entries) {
    const topic = entry[0].topic;
    let list = topics.get(topic);
    if (!list) topics.set(topic, (list = []));
    list.push(value(entry));
  }
  return [...topics].map(([topic, partitions]) => ({ topic, partitions }));
};
