import type { Logger } from 'pino';
import type { EventFilter, EventStore, RecordedEvent, Subscription } from '../../infra/event-store/port.ts';

export interface CheckpointedSubscription {
  /** Resolves when every event committed before the call was handled (and checkpointed). */
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A subscription that survives failures: it resumes from its stored checkpoint after a handler
 * or store error, with a growing pause, and stores the checkpoint after each handled batch. The
 * handler may see a batch again after a crash (at-least-once), never skips one.
 */
export const startCheckpointedSubscription = async (
  store: EventStore,
  options: {
    name: string;
    filter: EventFilter;
    handler: (events: RecordedEvent[]) => Promise<void>;
    log: Logger;
    batchSize?: number;
  },
): Promise<CheckpointedSubscription> => {
  let current: Subscription | undefined;
  let stopped = false;
  let delay = 100;
  let retryTimer: NodeJS.Timeout | undefined;

  const start = async (): Promise<void> => {
    if (stopped) return;
    try {
      const after = (await store.readCheckpoint(options.name)) ?? 0n;
      current = store.subscribe({
        after,
        filter: options.filter,
        batchSize: options.batchSize ?? 500,
        handler: async (events) => {
          await options.handler(events);
          await store.storeCheckpoint(options.name, events[events.length - 1]!.globalPosition);
          delay = 100;
        },
        onError: (error) => restart(error),
      });
    } catch (error) {
      restart(error);
    }
  };

  const restart = (error: unknown) => {
    if (stopped) return;
    options.log.error({ err: error, subscription: options.name, retryInMs: delay }, 'subscription failed; will resume from its checkpoint');
    const failed = current;
    current = undefined;
    void failed?.stop().catch(() => undefined);
    retryTimer = setTimeout(() => void start(), delay);
    delay = Math.min(delay * 2, 5000);
  };

  await start();
  return {
    catchUp: async () => {
      await current?.catchUp();
    },
    stop: async () => {
      stopped = true;
      if (retryTimer) clearTimeout(retryTimer);
      await current?.stop();
    },
  };
};
