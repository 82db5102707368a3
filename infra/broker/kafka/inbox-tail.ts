import type { Batch, Consumer as KafkaConsumer, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { ConsumedRecord } from '../port.ts';
import { isUnknownTopic } from './kafka-clients.ts';
import { fromKafkaMessage } from './kafka-records.ts';

interface PartitionBuffer {
  /** Fetched records not known to be popped, in offset order. */
  records: ConsumedRecord[];
  /** Offset after the last record fetched. */
  next: bigint;
  paused: boolean;
}

export interface InboxTailOptions {
  kafka: Kafka;
  /** A group of this process alone: the tail reads every partition of the topics it follows. */
  groupId: string;
  /** Records buffered per partition before its fetching pauses (until pops drain it). */
  maxBuffered: number;
  /** How long the broker holds a fetch that finds nothing (a record that comes answers it at once). */
  maxWaitMs: number;
  /** The port's name of a Kafka topic, for the records handed out. */
  portTopic: (kafkaTopic: string) => string;
  /** Which of the topics exist now (a topic deleted by any process is dropped from the tail). */
  existing: (topics: readonly string[]) => Promise<string[]>;
  log: Logger;
}

/** Where a followed topic starts, per partition: its pop cursor's floor, and its end when followed. */
export interface FollowStart {
  readonly floors: ReadonlyMap<number, bigint>;
  readonly highs: ReadonlyMap<number, bigint>;
}

const CATCH_UP_TIMEOUT_MS = 10_000;
/** What a topic without buffered partitions answers (not a new map for each look). */
const NO_PARTITIONS: ReadonlyMap<number, PartitionBuffer> = new Map();

/**
 * The records of the topics this process pops from, fetched as they arrive and kept until they
 * are popped (here or by another process): pops read this buffer and claim what they take through
 * the pop cursor. kafkajs cannot add a topic to a running consumer, so following a new topic
 * restarts the tail's consumer; records fetched so far stay buffered, and the restarted consumer
 * resumes where the old one stopped (its group is this process's own, positioned before start).
 * A followed topic that is deleted (by this process or another) is dropped: kafkajs would
 * otherwise fail every fetch of the tail on the missing topic's metadata.
 */
export class InboxTail {
  private readonly buffers = new Map<string, Map<number, PartitionBuffer>>();
  private readonly wanted = new Set<string>();
  private readonly followed = new Set<string>();
  /** Where to start a topic not fetched yet: the cursor's floor per partition. */
  private readonly startAt = new Map<string, Map<number, bigint>>();
  private consumer: KafkaConsumer | undefined;
  private restarting: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(private readonly options: InboxTailOptions) {}

  /**
   * Resolves once the topic is followed and every record it held when this was called has been
   * fetched (or 10 s passed). `start.floors` says which offsets are popped already, so a new topic is
   * not fetched from its beginning; `start.highs` where each partition ended when this was called.
   */
  follow(topic: string, start: FollowStart): Promise<void> {
    return this.followMany([[topic, start]]);
  }

  /**
   * Follows every topic given with one restart of the consumer (a restart costs seconds once the
   * tail follows thousands of topics); resolves as `follow` does, once all are caught up.
   */
  async followMany(entries: ReadonlyArray<readonly [topic: string, start: FollowStart]>): Promise<void> {
    const fresh = entries.filter(([topic]) => !this.followed.has(topic));
    if (fresh.length === 0) return;
    for (const [topic, { floors }] of fresh) {
      if (this.wanted.has(topic)) continue;
      this.wanted.add(topic);
      this.startAt.set(topic, new Map(floors));
    }
    await this.restart();
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    const caughtUp = () =>
      fresh.every(
        ([topic, { floors, highs }]) =>
          !this.wanted.has(topic) ||
          [...highs].every(([partition, high]) => {
            const fetched = this.buffers.get(topic)?.get(partition)?.next ?? 0n;
            return fetched >= high || (floors.get(partition) ?? 0n) >= high;
          }),
      );
    while (!caughtUp() && Date.now() < deadline && !this.stopped) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  follows(topic: string): boolean {
    return this.followed.has(topic);
  }

  /** Stops following the topics and forgets their records (they were deleted). */
  async unfollow(topics: readonly string[]): Promise<void> {
    const dropped = topics.filter((topic) => this.wanted.has(topic) || this.buffers.has(topic));
    if (dropped.length === 0) return;
    for (const topic of dropped) {
      this.wanted.delete(topic);
      this.followed.delete(topic);
      this.startAt.delete(topic);
      this.buffers.delete(topic);
    }
    await this.restart();
  }

  /** The buffered partitions of a topic (empty when not followed). */
  partitions(topic: string): ReadonlyMap<number, PartitionBuffer> {
    return this.buffers.get(topic) ?? NO_PARTITIONS;
  }

  /** Forgets records that were popped; resumes a partition that had paused on a full buffer. */
  drop(topic: string, partition: number, isGone: (record: ConsumedRecord) => boolean): void {
    const buffer = this.buffers.get(topic)?.get(partition);
    if (!buffer) return;
    buffer.records = buffer.records.filter((record) => !isGone(record));
    if (buffer.paused && buffer.records.length < this.options.maxBuffered / 2) {
      buffer.paused = false;
      this.consumer?.resume([{ topic, partitions: [partition] }]);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.restarting?.catch(() => undefined);
    await this.consumer?.disconnect();
    this.consumer = undefined;
  }

  /** Restarts the consumer with every wanted topic; a call during a restart gets one more round. */
  private restart(): Promise<void> {
    this.again = true;
    this.restarting ??= (async () => {
      try {
        while (this.again && !this.stopped) {
          this.again = false;
          await this.startConsumer();
        }
      } finally {
        this.restarting = undefined;
      }
    })();
    return this.restarting;
  }

  private async startConsumer(): Promise<void> {
    if (this.stopped) return;
    const { kafka, groupId, log } = this.options;
    await this.consumer?.disconnect();
    this.consumer = undefined;
    // A topic deleted meanwhile would fail the new consumer's every metadata request.
    const existing = new Set(await this.options.existing([...this.wanted]));
    for (const topic of [...this.wanted]) {
      if (existing.has(topic)) continue;
      this.wanted.delete(topic);
      this.followed.delete(topic);
      this.startAt.delete(topic);
      this.buffers.delete(topic);
    }
    const topics = [...this.wanted];
    if (topics.length === 0) return;
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: this.options.maxWaitMs,
      allowAutoTopicCreation: false,
      // Few retries: a tail that keeps failing (a followed topic deleted by another process) is
      // better crashed and started again than retrying for half a minute while pops wait.
      retry: {
        retries: 3,
        initialRetryTime: 100,
        maxRetryTime: 500,
        // A followed topic was deleted: the tail restarts without it (below) instead.
        restartOnFailure: async (error) => !isUnknownTopic(error),
      },
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      log.warn({ err: payload.error, restart: payload.restart }, 'kafka inbox tail crashed');
      if (isUnknownTopic(payload.error) && this.consumer === consumer) void this.restart().catch((err: unknown) => log.warn({ err }, 'kafka inbox tail not restarted'));
    });
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    this.consumer = consumer;
    await consumer.run({
      autoCommit: true,
      autoCommitInterval: 1_000,
      partitionsConsumedConcurrently: 4,
      eachBatch: async ({ batch }) => this.insert(batch),
    });
    // Start where the buffer ends (or at the cursor's floor), so that the consumer neither re-reads
    // what was fetched nor what was popped long ago. Seeking is possible once running; what a
    // fetch already under way brings from the group's committed offset is dropped by insert() (read
    // already) or by the pops (popped). Not admin.setOffsets: it runs a consumer of its own, which
    // kafkajs restarts for ever when a topic of its client's metadata was deleted.
    for (const topic of topics) {
      const partitions = new Map(this.startAt.get(topic));
      for (const [partition, buffer] of this.buffers.get(topic) ?? []) partitions.set(partition, buffer.next);
      for (const [partition, offset] of partitions) if (offset > 0n) consumer.seek({ topic, partition, offset: String(offset) });
    }
    for (const topic of topics) this.followed.add(topic);
    for (const [topic, partitions] of this.buffers)
      for (const [partition, buffer] of partitions) if (buffer.paused) consumer.pause([{ topic, partitions: [partition] }]);
  }

  private insert(batch: Batch): void {
    const { topic, partition } = batch;
    let partitions = this.buffers.get(topic);
    if (!partitions) this.buffers.set(topic, (partitions = new Map()));
    let buffer = partitions.get(partition);
    if (!buffer) partitions.set(partition, (buffer = { records: [], next: 0n, paused: false }));
    for (const message of batch.messages) {
      const offset = BigInt(message.offset);
      if (offset < buffer.next) continue; // fetched before a restart
      buffer.records.push(fromKafkaMessage(this.options.portTopic(topic), partition, message));
      buffer.next = offset + 1n;
    }
    if (!buffer.paused && buffer.records.length >= this.options.maxBuffered) {
      buffer.paused = true;
      this.consumer?.pause([{ topic, partitions: [partition] }]);
    }
  }
}
