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
 *
 * With `advanceWhenQuietMs`, a subscription that handled nothing for that long moves its checkpoint
 * to the store's head once it has caught up with it: the events its filter leaves out are not
 * behind it (without it, a publisher whose last events were all of types it skips, webhook
 * attempts, showed a lag of 10,000 events for ever; session 31).
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
    advanceWhenQuietMs?: number;
  },
): Promise<CheckpointedSubscription> => {
  /** The checkpoint as last read (by `resumeAfter`, at each start) or written here. */
  let stored = 0n;
  let handledSinceLook = false;
  const subscription = await startResilientSubscription(store, {
    filter: options.filter,
    batchSize: options.batchSize ?? 500,
    maxBatchBytes: options.maxBatchBytes,
    resumeAfter: async () => (stored = (await store.readCheckpoint(options.name)) ?? 0n),
    handler: async (events) => {
      handledSinceLook = true;
      await options.handler(events);
      const position = events[events.length - 1]!.globalPosition;
      if (position > stored) stored = position; // before the write: a move to the head meanwhile must not take it back
      await store.storeCheckpoint(options.name, position);
    },
    onFailure: (error, retryInMs) =>
      options.log.error({ err: error, subscription: options.name, retryInMs }, 'subscription failed; will resume from its checkpoint'),
    minDelayMs: 100,
    maxDelayMs: 5000,
  });

  let advancing: Promise<void> | undefined;
  const advance = async (): Promise<void> => {
    const head = await store.headPosition();
    if (head <= stored) return;
    // Every event up to the head that the filter selects is handled (and checkpointed) once this resolves.
    await subscription.catchUp();
    if (head <= stored) return;
    stored = head;
    await store.storeCheckpoint(options.name, head);
  };
  const timer =
    options.advanceWhenQuietMs === undefined
      ? undefined
      : setInterval(() => {
          const quiet = !handledSinceLook;
          handledSinceLook = false;
          if (!quiet || advancing) return;
          advancing = advance()
            .catch((error: unknown) => options.log.debug({ err: error, subscription: options.name }, 'checkpoint not moved to the head; tried again when quiet'))
            .finally(() => (advancing = undefined));
        }, options.advanceWhenQuietMs);
  timer?.unref();

  return {
    catchUp: () => subscription.catchUp(),
    stop: async () => {
      clearInterval(timer);
      await subscription.stop(); // a move to the head waiting for it to catch up gives up
      await advancing;
    },
  };
};
