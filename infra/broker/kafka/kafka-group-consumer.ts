import type { Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { ConsumeOptions, ConsumedRecord, Consumer } from '../port.ts';
import { fromKafkaMessage } from './kafka-records.ts';

/** How long a partition rests after its handler threw, before the same records are fetched again. */
const RETRY_AFTER_ERROR_MS = 500;

/**
 * `Broker.consume` on Kafka: one kafkajs consumer in the caller's group. Records are handed in
 * order per partition, at most `batchSize` at a time and one handler call at a time; the offset
 * after a batch is committed once its handler resolved. A record whose due time is ahead pauses
 * its partition until then (other partitions and topics go on); a handler that throws pauses the
 * partition briefly and gets the same records again, since the offsets it did not resolve are
 * fetched anew.
 */
export const startGroupConsumer = async (
  kafka: Kafka,
  options: ConsumeOptions,
  /** The port's name of a Kafka topic (without the deployment's prefix). */
  portTopic: (kafkaTopic: string) => string,
  log: Logger,
): Promise<Consumer> => {
  const batchSize = options.batchSize ?? 100;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  };
  const consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: 10_000,
    rebalanceTimeout: 15_000,
    heartbeatInterval: 1_000,
    maxWaitTimeInMs: 250,
    allowAutoTopicCreation: false,
    retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000 },
  });
  consumer.on(consumer.events.CRASH, ({ payload }) =>
    log.warn({ err: payload.error, groupId: options.groupId, restart: payload.restart }, 'kafka consumer crashed'),
  );
  await consumer.connect();
  await consumer.subscribe({ topics: [...options.topics], fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachBatchAutoResolve: false,
    partitionsConsumedConcurrently: 1,
    eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale, pause }) => {
      const { topic, partition } = batch;
      const records: ConsumedRecord[] = batch.messages.map((message) => fromKafkaMessage(portTopic(topic), partition, message));
      let i = 0;
      while (i < records.length && isRunning() && !isStale()) {
        const now = Date.now();
        const chunk: ConsumedRecord[] = [];
        while (i < records.length && chunk.length < batchSize) {
          const dueAt = records[i]!.dueAt;
          if (dueAt !== undefined && dueAt > now) break;
          chunk.push(records[i++]!);
        }
        if (chunk.length === 0) {
          // The head is not due: rest this partition until it is; the fetch resumes at the head.
          const resume = pause();
          later(records[i]!.dueAt! - now, resume);
          return;
        }
        try {
          await options.handler(chunk);
        } catch (error) {
          options.onError?.(error);
          const resume = pause();
          later(RETRY_AFTER_ERROR_MS, resume);
          return;
        }
        const last = chunk[chunk.length - 1]!.offset;
        resolveOffset(String(last));
        await commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: String(last + 1n) }] }] });
        await heartbeat();
      }
    },
  });

  let stopping: Promise<void> | undefined;
  return {
    stop: () =>
      (stopping ??= (async () => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        await consumer.disconnect();
      })()),
  };
};
