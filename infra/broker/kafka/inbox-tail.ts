import type { Admin, Batch, Consumer as KafkaConsumer, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { ConsumedRecord } from '../port.ts';
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
  admin: Admin;
  /** A group of this process alone: the tail reads every partition of the topics it follows. */
  groupId: string;
  /** Records buffered per partition before its fetching pauses (until pops drain it). */
  maxBuffered: number;
  /** The port's name of a Kafka topic, for the records handed out. */
  portTopic: (kafkaTopic: string) => string;
  log: Logger;
}

const CATCH_UP_TIMEOUT_MS = 10_000;

/**
 * The records of the topics this process pops from, fetched as they arrive and kept until they
 * are popped (here or by another process): pops read this buffer and claim what they take through
 * the pop cursor. kafkajs cannot add a topic to a running consumer, so following a new topic
 * restarts the tail's consumer; records fetched so far stay buffered, and the restarted consumer
 * resumes where the old one stopped (its group is this process's own, positioned before start).
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
   * fetched (or 10 s passed). `floors` says which offsets are popped already, so a new topic is
   * not fetched from its beginning.
   */
  async follow(topic: string, floors: ReadonlyMap<number, bigint>): Promise<void> {
    if (this.followed.has(topic)) return;
    if (!this.wanted.has(topic)) {
      this.wanted.add(topic);
      this.startAt.set(topic, new Map(floors));
    }
    const highs = await this.options.admin.fetchTopicOffsets(topic);
    await this.restart();
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    const caughtUp = () =>
      highs.every(({ partition, high }) => {
        const fetched = this.buffers.get(topic)?.get(partition)?.next ?? 0n;
        return fetched >= BigInt(high) || (floors.get(partition) ?? 0n) >= BigInt(high);
      });
    while (!caughtUp() && Date.now() < deadline && !this.stopped) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  follows(topic: string): boolean {
    return this.followed.has(topic);
  }

  /** The buffered partitions of a topic (empty when not followed). */
  partitions(topic: string): ReadonlyMap<number, PartitionBuffer> {
    return this.buffers.get(topic) ?? new Map();
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
    const { kafka, admin, groupId, log } = this.options;
    const topics = [...this.wanted];
    await this.consumer?.disconnect();
    this.consumer = undefined;
    // Position this process's group where the buffer ends (or at the cursor's floor), so the
    // new consumer neither re-reads what was fetched nor what was popped long ago.
    for (const topic of topics) {
      const partitions = new Map(this.startAt.get(topic));
      for (const [partition, buffer] of this.buffers.get(topic) ?? []) partitions.set(partition, buffer.next);
      const seek = [...partitions].filter(([, offset]) => offset > 0n).map(([partition, offset]) => ({ partition, offset: String(offset) }));
      if (seek.length > 0) await admin.setOffsets({ groupId, topic, partitions: seek }).catch((err: unknown) => log.debug({ err, topic }, 'tail offsets not set'));
    }
    const consumer = kafka.consumer({
      groupId,
      sessionTimeout: 10_000,
      heartbeatInterval: 1_000,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
      retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000 },
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => log.warn({ err: payload.error, restart: payload.restart }, 'kafka inbox tail crashed'));
    await consumer.connect();
    await consumer.subscribe({ topics, fromBeginning: true });
    this.consumer = consumer;
    await consumer.run({
      autoCommit: true,
      autoCommitInterval: 1_000,
      partitionsConsumedConcurrently: 4,
      eachBatch: async ({ batch }) => this.insert(batch),
    });
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
