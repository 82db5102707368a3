/**
 * The Broker port: log topics that carry messages (never state).
 *
 * Which topics exist and how they are kept is the application's business (Relay's are named in
 * apps/services/topology.ts): adapters learn it from a TopicPolicy. Shaped so that both the
 * embedded SQLite log and
 * Apache Kafka (kafkajs) implement it: consumption is by consumer group with committed
 * offsets, records are ordered per topic (per partition on Kafka), and `pop` is the destructive
 * read behind the public poll endpoint.
 */

import { UnavailableError } from '../errors/unavailable.ts';

export type Headers = Readonly<Record<string, string>>;

export interface OutgoingRecord {
  readonly topic: string;
  /** Partitioning / ordering key (Kafka key). */
  readonly key?: string;
  /** Payload, a JSON document serialised as a string. */
  readonly value: string;
  readonly headers?: Headers;
  /**
   * Idempotency id (for Relay: the message id). Adapters that can (the embedded log) drop a
   * second record with the same id on the same topic; the others pass it along so that
   * consumers can de-duplicate.
   */
  readonly id?: string;
  /** Epoch ms before which consumers must not receive this record (retry topics). */
  readonly dueAt?: number;
}

export interface ConsumedRecord {
  readonly topic: string;
  readonly partition: number;
  /** Position in the topic (partition); serialise as a string. */
  readonly offset: bigint;
  readonly key: string | undefined;
  readonly value: string;
  readonly headers: Headers;
  readonly id: string | undefined;
  readonly dueAt: number | undefined;
  /** Epoch ms when the broker stored the record. */
  readonly timestamp: number;
}

export interface ConsumeOptions {
  /** Consumer group: each record is handed to one member of the group; offsets are per group. */
  readonly groupId: string;
  readonly topics: readonly string[];
  /**
   * Records of one topic (partition), in order, all due. The offset after the last record is
   * committed only when the promise resolves (at-least-once). A throw re-delivers the same
   * records after a short pause; nothing is skipped. `held` fences what the handler does with them
   * outside the broker (see HeldRecords).
   */
  readonly handler: (records: ConsumedRecord[], held: HeldRecords) => Promise<void>;
  /** Max records per handler call. Default 100. */
  readonly batchSize?: number;
  readonly onError?: (error: unknown) => void;
}

/**
 * The member's hold on the records of one handler call. Another member of the group is handed the
 * same records once this one is taken to be gone (on Kafka: its session ran out, or a rebalance
 * went on without it; on the embedded log: its lease ran out), even if this one still runs: a
 * process frozen (SIGSTOP, a VM paused, a long GC) past that and then continued does not know it
 * yet. `confirm()` is called right before an effect outside the broker that must not happen twice
 * (a hand-off to a messenger): it resolves at once while the hold was confirmed recently (no I/O),
 * asks the broker otherwise, and rejects with RecordsNoLongerHeldError when this member may no
 * longer hold the records (or it cannot tell: the broker did not answer), so that the handler stops
 * before acting on them; its batch is then handed again to whoever holds them.
 */
export interface HeldRecords {
  confirm(): Promise<void>;
  /** The same look without I/O: true while the hold was confirmed recently, false when `confirm` would have to ask or would reject. */
  stillHeld(): boolean;
}

/** `HeldRecords.confirm` found the records may be another member's now: nothing more may be done with them here. */
export class RecordsNoLongerHeldError extends Error {
  override readonly name = 'RecordsNoLongerHeldError';
}

/** A hold that is never lost (a consumer with no other member, tests). */
export const ALWAYS_HELD: HeldRecords = { confirm: () => Promise.resolve(), stillHeld: () => true };

export interface PopOptions {
  /**
   * Called with the records about to be popped, before the pop takes effect. If it rejects,
   * nothing is popped and `pop` rejects with its error: a caller that cannot use what it would
   * pop (it cannot decrypt it, say) loses nothing. A pop returns only records `accept` saw; it may
   * return fewer when another caller popped some of them meanwhile. Not called when there is
   * nothing to pop; called again with a new selection when an adapter had to select again (Kafka,
   * after another process claimed first): the pop then returns records of the last call only.
   */
  readonly accept?: (records: readonly ConsumedRecord[]) => Promise<void>;
}

/** How a topic is kept: what an adapter needs to know when it creates one and when it prunes. */
export interface TopicPolicy {
  /** Partitions of the topic when the broker creates it (Kafka; the embedded log has one). */
  readonly partitions: number;
  /**
   * Records older than this are deleted even if no group consumed them and nobody popped them.
   * Undefined: kept until every consumer group committed past them (or they are popped).
   */
  readonly retentionMs?: number;
}

export interface Consumer {
  /** Stops fetching, waits for the handler in flight, commits, and leaves the group. */
  stop(): Promise<void>;
}

/**
 * Roles that one process of a deployment runs at a time (a publisher, say), leased among the
 * processes that can run them. Each role of the group is held by at most one live member; a member
 * that stops hands its roles over at once, one that dies loses them within the adapter's bound.
 */
export interface RoleLeaseOptions {
  /** The processes that compete for these roles (one group per kind of part a process runs). */
  readonly group: string;
  /** The roles, in a fixed order (an adapter may number them). */
  readonly roles: readonly string[];
  /**
   * Told the roles this process holds, each time that changes: it starts those it gained and
   * stops those it lost. An empty set when it holds none (stopped, or cut off from the broker).
   */
  readonly onChange: (held: ReadonlySet<string>) => void;
  readonly onError?: (error: unknown) => void;
}

/** A member's part in a role lease group: `stop` gives its roles up (after telling `onChange` it holds none). */
export type RoleLeases = Consumer;

export interface Broker {
  readonly kind: string;
  /**
   * Creates topics that do not exist yet (idempotent), as the adapter's TopicPolicy says.
   * Publishing to a topic also creates it.
   */
  ensureTopics(topics: readonly string[]): Promise<void>;
  /** Durably appends the records (in order per topic) before resolving. */
  publish(records: readonly OutgoingRecord[]): Promise<void>;
  /**
   * Resolves once the consumer is set up; joining the group may go on after (on Kafka, until the
   * session of a member that died without leaving runs out). Records reach the handler from then.
   */
  consume(options: ConsumeOptions): Promise<Consumer>;
  /**
   * Destructive read: removes and returns up to `max` of the oldest records of `topic`. A popped
   * record is never returned again, to any caller, in any process sharing the broker.
   */
  pop(topic: string, max: number, options?: PopOptions): Promise<ConsumedRecord[]>;
  /**
   * True when the broker knows, without asking its storage, that a pop of `topic` would find
   * nothing now (the embedded broker remembers an empty topic until a record may have come); false
   * when it does not know. Lets an empty poll be answered without a pop. Optional: a broker
   * without it is asked by `pop`.
   */
  knownEmpty?(topic: string): boolean;
  /**
   * True when `knownEmpty` is true for every one of the topics. A broker may remember the answer
   * for the same array (a poll's list of queues) while nothing could have changed it, so that the
   * cost does not grow with the topics. Optional: else ask `knownEmpty` of each.
   */
  knownEmptyAll?(topics: readonly string[]): boolean;
  /**
   * Gets ready to pop from these topics, all at once: a broker that reads ahead of pops (Kafka's
   * inbox tail) follows them in one go instead of one pop at a time. Topics that do not exist are
   * passed by. Optional: a broker without it is simply popped from.
   */
  follow?(topics: readonly string[]): Promise<void>;
  /**
   * Has `listener` told the topic of records that reached what this process reads ahead of pops
   * (Kafka's inbox tail), whoever published them: a followed topic `knownEmpty` called empty may hold
   * a record to pop from then (a record due later is told as it arrives, not as it falls due).
   * Returns the way to stop listening. Optional: a broker without it
   * gives no word (the embedded one; ask `knownEmpty` again, or pop).
   */
  watchArrivals?(listener: (topic: string) => void): () => void;
  /**
   * Joins the group leasing the roles; resolves once joining began (holding a role may come later).
   * See RoleLeaseOptions.
   */
  leaseRoles(options: RoleLeaseOptions): Promise<RoleLeases>;
  /** Deletes topics with every record in them (idempotent: an unknown topic is no error). */
  deleteTopics(topics: readonly string[]): Promise<void>;
  /** The largest record (value, key and headers, in bytes) `publish` takes. */
  readonly maxRecordBytes: number;
  /** Number of records not yet popped (inbound) or not yet consumed by `groupId`. */
  depth(topic: string, groupId?: string): Promise<number>;
  /** Throws BrokerUnavailableError if the broker cannot be reached. */
  ping(): Promise<void>;
  /**
   * False until the adapter has reached the broker once (at start-up, so that health can answer
   * 503 until then), while it knows the broker to be unreachable (its last probe or operation
   * failed), and after close. No I/O: the send path asks it on every request, so that messages are
   * refused with 503 rather than accepted into a pipeline that cannot move them.
   */
  isReady(): boolean;
  close(): Promise<void>;
}

/** A record over `maxRecordBytes` was given to `publish`: nothing of that publish was written. */
export class RecordTooLargeError extends Error {
  override readonly name = 'RecordTooLargeError';
  constructor(
    readonly topic: string,
    readonly bytes: number,
    readonly maxBytes: number,
  ) {
    super(`A record of ${bytes} bytes for ${topic} is over the broker's limit of ${maxBytes} bytes`);
  }
}

/** Raised when the broker cannot be reached or fails an operation: maps to 503. */
export class BrokerUnavailableError extends UnavailableError {
  override readonly name: string = 'BrokerUnavailableError';
}
