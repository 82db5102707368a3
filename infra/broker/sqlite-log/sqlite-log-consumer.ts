import type { ConsumeOptions, ConsumedRecord, Consumer } from '../port.ts';

/** What a consumer needs from the log: reads from an offset, and committed offsets. */
export interface ConsumerSource {
  readFrom(topic: string, offset: bigint, limit: number): ConsumedRecord[];
  startOffset(groupId: string, topic: string): bigint;
  commit(groupId: string, topic: string, nextOffset: bigint): void;
}

export interface LogConsumer extends Consumer {
  /** The log may have grown (a publish in this process, or a poll tick). */
  wake(): void;
}

const MAX_BACKOFF_MS = 5000;

/**
 * A consumer-group member of the embedded log. Topics are served in turn; a topic whose head is
 * not due yet sleeps on a timer until it is, while the others keep flowing. Handler calls are
 * sequential; the offset after a batch is committed only once the handler resolved, and a
 * failed batch is handed again after a growing pause.
 */
export const createLogConsumer = (source: ConsumerSource, options: ConsumeOptions, onStop: (c: LogConsumer) => void): LogConsumer => {
  const batchSize = options.batchSize ?? 100;
  const offsets = new Map<string, bigint>(options.topics.map((topic) => [topic, source.startOffset(options.groupId, topic)]));
  const sleepingUntil = new Map<string, number>();
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let stopped = false;
  let backoff = 100;
  let inflight: Promise<void> = Promise.resolve();

  const scheduleDue = () => {
    if (timer) clearTimeout(timer);
    timer = undefined;
    if (sleepingUntil.size === 0 || stopped) return;
    const next = Math.min(...sleepingUntil.values());
    timer = setTimeout(() => consumer.wake(), Math.max(0, next - Date.now()) + 1);
  };

  /** One pass over the topics; returns whether some handler ran (so another pass may find more). */
  const pass = async (): Promise<boolean> => {
    let worked = false;
    const now = Date.now();
    for (const topic of options.topics) {
      if (stopped) return false;
      const wakeAt = sleepingUntil.get(topic);
      if (wakeAt !== undefined && wakeAt > now) continue;
      sleepingUntil.delete(topic);
      const records = source.readFrom(topic, offsets.get(topic)!, batchSize);
      const due: ConsumedRecord[] = [];
      for (const record of records) {
        if (record.dueAt !== undefined && record.dueAt > now) {
          sleepingUntil.set(topic, record.dueAt);
          break;
        }
        due.push(record);
      }
      if (due.length === 0) continue;
      await options.handler(due);
      const next = due[due.length - 1]!.offset + 1n;
      source.commit(options.groupId, topic, next);
      offsets.set(topic, next);
      worked = true;
      // Let requests and timers waiting on the event loop run between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return worked;
  };

  const pump = async () => {
    try {
      do {
        again = false;
        while (!stopped && (await pass())) backoff = 100;
      } while (again && !stopped);
      scheduleDue();
    } catch (error) {
      options.onError?.(error);
      if (!stopped) {
        if (timer) clearTimeout(timer);
        timer = setTimeout(() => consumer.wake(), backoff);
        backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
      }
    } finally {
      running = false;
    }
  };

  const consumer: LogConsumer = {
    wake() {
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      inflight = Promise.resolve().then(pump);
    },
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      onStop(consumer);
      await inflight;
    },
  };
  return consumer;
};
