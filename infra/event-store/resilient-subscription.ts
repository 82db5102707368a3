import type { EventFilter, EventStore, RecordedEvent, Subscription } from './port.ts';

/**
 * A subscription that survives failures: when the handler or the store fails, it stops, pauses,
 * and subscribes again after the position `resumeAfter` gives at that moment (a stored
 * checkpoint, or how far a consumer got in memory). The pause starts at `minDelayMs`, doubles on
 * each failure in a row up to `maxDelayMs`, and is back to `minDelayMs` once a batch is handled.
 * What is delivered again after a failure depends on `resumeAfter` (at-least-once from a stored
 * checkpoint); nothing after it is skipped.
 */
export interface ResilientSubscription {
  /** Whether a subscription follows the store now (false while it pauses before resuming). */
  readonly following: boolean;
  /**
   * Resolves when every event committed before the call has been handled by the subscription
   * following now; at once when none is (it will catch up when it resumes). Rejects when that
   * subscription stops first.
   */
  catchUp(): Promise<void>;
  /** Stops for good; resolves once the handler in flight (if any) has finished. */
  stop(): Promise<void>;
}

export interface ResilientSubscriptionOptions {
  readonly filter: EventFilter;
  readonly batchSize?: number | undefined;
  /** At most this many bytes of event data and metadata per batch (the store's default: 4 MiB). */
  readonly maxBatchBytes?: number | undefined;
  /** The position to subscribe after, asked at the start and at every resumption. */
  readonly resumeAfter: () => Promise<bigint> | bigint;
  readonly handler: (events: RecordedEvent[]) => Promise<void> | void;
  /** Told every failure and the pause before the next attempt. */
  readonly onFailure: (error: unknown, retryInMs: number) => void;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
}

/** Subscribes (or, when that fails, schedules the next attempt) and resolves. */
export const startResilientSubscription = async (store: EventStore, options: ResilientSubscriptionOptions): Promise<ResilientSubscription> => {
  let current: Subscription | undefined;
  let stopped = false;
  let delay = options.minDelayMs;
  let retryTimer: NodeJS.Timeout | undefined;

  const restart = (error: unknown): void => {
    if (stopped) return;
    options.onFailure(error, delay);
    const failed = current;
    current = undefined;
    void failed?.stop().catch(() => undefined);
    retryTimer = setTimeout(() => void start(), delay);
    delay = Math.min(delay * 2, options.maxDelayMs);
  };

  const start = async (): Promise<void> => {
    retryTimer = undefined;
    if (stopped) return;
    try {
      const after = await options.resumeAfter();
      if (stopped) return;
      const subscription: Subscription = store.subscribe({
        after,
        filter: options.filter,
        ...(options.batchSize === undefined ? {} : { batchSize: options.batchSize }),
        ...(options.maxBatchBytes === undefined ? {} : { maxBatchBytes: options.maxBatchBytes }),
        handler: async (events) => {
          await options.handler(events);
          delay = options.minDelayMs;
        },
        // A subscription replaced already (stopped after its failure) has nothing more to say.
        onError: (error) => {
          if (current === subscription) restart(error);
        },
      });
      current = subscription;
    } catch (error) {
      restart(error);
    }
  };

  await start();
  return {
    get following() {
      return current !== undefined;
    },
    catchUp: async () => {
      await current?.catchUp();
    },
    stop: async () => {
      stopped = true;
      if (retryTimer !== undefined) clearTimeout(retryTimer);
      await current?.stop();
    },
  };
};
