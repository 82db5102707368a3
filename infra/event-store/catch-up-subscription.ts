import {
  subscriptionBatchSize,
  subscriptionMaxBatchBytes,
  type EventFilter,
  type RecordedEvent,
  type SubscribeOptions,
  type Subscription,
} from './port.ts';

/** One page of a read of the final part of the log. */
export interface SourcePage {
  /** Events matching the filter after the read's `after`, in global order. */
  readonly events: RecordedEvent[];
  /**
   * How far the log was scanned: every matching event at or below it is in `events` (or before
   * `after`), and no event at or below it can still appear.
   */
  readonly scanned: bigint;
  /** Whether the page ended on its limit (count or bytes) before the final part of the log did. */
  readonly more: boolean;
}

/** Where an asynchronous catch-up subscription reads from. */
export interface AsyncSubscriptionSource {
  /** Highest position committed now: what `catchUp` waits for. */
  committedHead(): Promise<bigint>;
  /**
   * Events matching `filter` after `after`, in global order, at most `limit` of them and at most
   * `maxBytes` of data and metadata (at least one event when one matches), from one snapshot.
   */
  read(after: bigint, limit: number, maxBytes: number, filter: EventFilter | undefined): Promise<SourcePage>;
}

export interface AsyncCatchUpSubscription extends Subscription {
  /** Told by the store that the final part of the log may have grown up to `head`. */
  wake(head: bigint): void;
}

/**
 * A catch-up subscription over a store whose reads are asynchronous (PostgreSQL) or synchronous
 * (SQLite, wrapped in promises): one implementation for every adapter.
 *
 * Reads are awaited, so a wake (or a catchUp) can arrive while a read is in flight and that read
 * may not see the commit that caused it: such calls set `again`, and the pump reads once more
 * before going idle instead of dropping the wake.
 *
 * `position` is how far the log has been scanned and handled: every matching event at or below
 * it has been handed to the handler and the handler has finished.
 */
export function createAsyncCatchUpSubscription(
  source: AsyncSubscriptionSource,
  options: SubscribeOptions,
  onStopped: (subscription: AsyncCatchUpSubscription) => void,
): AsyncCatchUpSubscription {
  const batchSize = subscriptionBatchSize(options);
  const maxBatchBytes = subscriptionMaxBatchBytes(options);
  let position = options.after;
  let running = false;
  let again = false;
  let stopped = false;
  let failure: unknown;
  let inflight: Promise<void> = Promise.resolve();
  const waiters: { target: bigint; resolve: () => void; reject: (error: unknown) => void }[] = [];

  const settleWaiters = (): void => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const waiter = waiters[i]!;
      if (waiter.target <= position) {
        waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  };

  const stoppedError = (): unknown => failure ?? new Error('The subscription is stopped');

  const halt = (): void => {
    if (stopped) return;
    stopped = true;
    onStopped(subscription);
    const error = stoppedError();
    for (const waiter of waiters.splice(0)) waiter.reject(error);
  };

  const pump = async (): Promise<void> => {
    try {
      for (;;) {
        if (stopped) return;
        again = false;
        const { events, scanned, more } = await source.read(position, batchSize, maxBatchBytes, options.filter);
        if (stopped) return;
        if (events.length > 0) {
          await options.handler(events);
          if (stopped) return;
        }
        if (scanned > position) position = scanned;
        settleWaiters();
        if (more) {
          // Replaying a backlog: let I/O and timers run between batches even if the handler is sync.
          await new Promise<void>((resolve) => setImmediate(resolve));
        } else if (!again) {
          return; // idle until the next wake
        }
      }
    } catch (error) {
      failure ??= error;
      halt();
      try {
        options.onError?.(error);
      } catch {
        // onError must not take the process down; the subscription is already stopped.
      }
    } finally {
      running = false;
    }
  };

  /** Starts the pump unless it runs (then makes it read again); in a microtask, never inside a caller's call. */
  const kick = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    inflight = Promise.resolve().then(pump);
  };

  const subscription: AsyncCatchUpSubscription = {
    wake(head) {
      if (running) again = true;
      else if (!stopped && head > position) kick();
    },
    async catchUp() {
      if (stopped) throw stoppedError();
      const target = await source.committedHead();
      if (stopped) throw stoppedError();
      if (target <= position) return;
      await new Promise<void>((resolve, reject) => {
        waiters.push({ target, resolve, reject });
        kick();
      });
    },
    async stop() {
      halt();
      await inflight;
    },
  };

  setImmediate(kick);
  return subscription;
}
