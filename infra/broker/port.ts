/**
 * The Broker port: log topics that carry messages (never state).
 *
 * Topics used by Relay: `outbound.<messenger>`, `outbound.retry.<n>`, `outbound.dead`,
 * `inbound.<appId>`, `events.<category>`. Shaped so that both the embedded SQLite log and
 * Apache Kafka (kafkajs) implement it: consumption is by consumer group with committed
 * offsets, records are ordered per topic (per partition on Kafka), and `pop` is the destructive
 * read behind the public poll endpoint.
 */

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
   * records after a short pause; nothing is skipped.
   */
  readonly handler: (records: ConsumedRecord[]) => Promise<void>;
  /** Max records per handler call. Default 100. */
  readonly batchSize?: number;
  readonly onError?: (error: unknown) => void;
}

export interface Consumer {
  /** Stops fetching, waits for the handler in flight, commits, and leaves the group. */
  stop(): Promise<void>;
}

export interface Broker {
  readonly kind: string;
  /** Creates topics that do not exist yet (idempotent). Publishing to a topic also creates it. */
  ensureTopics(topics: readonly string[]): Promise<void>;
  /** Durably appends the records (in order per topic) before resolving. */
  publish(records: readonly OutgoingRecord[]): Promise<void>;
  consume(options: ConsumeOptions): Promise<Consumer>;
  /**
   * Destructive read: removes and returns up to `max` of the oldest records of `topic`. A popped
   * record is never returned again, to any caller, in any process sharing the broker.
   */
  pop(topic: string, max: number): Promise<ConsumedRecord[]>;
  /** Number of records not yet popped (inbound) or not yet consumed by `groupId`. */
  depth(topic: string, groupId?: string): Promise<number>;
  /** Throws BrokerUnavailableError if the broker cannot be reached. */
  ping(): Promise<void>;
  /**
   * False while the adapter knows the broker to be unreachable (its last probe or operation
   * failed) or after close. No I/O: the send path asks it on every request, so that messages are
   * refused with 503 rather than accepted into a pipeline that cannot move them.
   */
  isReady(): boolean;
  close(): Promise<void>;
}

/** Raised when the broker cannot be reached or fails an operation: maps to 503. */
export class BrokerUnavailableError extends Error {
  override readonly name = 'BrokerUnavailableError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

export const topics = {
  outbound: (messenger: string) => `outbound.${messenger}`,
  retry: (attempt: number) => `outbound.retry.${attempt}`,
  dead: 'outbound.dead',
  inbound: (appId: string) => `inbound.${appId}`,
  events: (category: string) => `events.${category}`,
} as const;
