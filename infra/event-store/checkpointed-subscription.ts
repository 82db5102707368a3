import type { Logger } from 'pino';
import type { EventFilter, EventStore, RecordedEvent } from './port.ts';
import { startResilientSubscription } from './resilient-subscription.ts';

export interface CheckpointedSubscription {
  /** Resolves when every event committed before the call was handled (and checkpointed). */
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A subscription that survives failures: it resumes from its stored checkpoint after a handler
 * or store error, with a growing pause (100 ms doubling to 5 s), and stores the checkpoint after
 * each handled batch. The handler may see a batch again after a crash (at-least-once), never
 * skips one.
 */
export const startCheckpointedSubscription = async (
  store: EventStore,
  options: {
    name: string;
    filter: EventFilter;
    handler: (events: RecordedEvent[]) => Promise<void>;
    log: Logger;
    batchSize?: number;
    /** At most this many bytes of event data and metadata per batch (the store's default: 4 MiB). */
    maxBatchBytes?: number;
  },
): Promise<CheckpointedSubscription> => {
  const subscription = await startResilientSubscription(store, {
    filter: options.filter,
    batchSize: options.batchSize ?? 500,
    maxBatchBytes: options.maxBatchBytes,
    resumeAfter: async () => (await store.readCheckpoint(options.name)) ?? 0n,
    handler: async (events) => {
      await options.handler(events);
      await store.storeCheckpoint(options.name, events[events.length - 1]!.globalPosition);
    },
    onFailure: (error, retryInMs) =>
      options.log.error({ err: error, subscription: options.name, retryInMs }, 'subscription failed; will resume from its checkpoint'),
    minDelayMs: 100,
    maxDelayMs: 5000,
  });
  return { catchUp: () => subscription.catchUp(), stop: () => subscription.stop() };
};
