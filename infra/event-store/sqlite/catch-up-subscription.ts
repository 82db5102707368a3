import type { EventFilter, RecordedEvent, SubscribeOptions, Subscription } from '../port.ts';

/**
 * Where a catch-up subscription reads from. Both reads are synchronous (better-sqlite3), which
 * is what makes the bookkeeping below race-free: nothing can interleave between reading the head
 * and deciding that the subscription is idle.
 */
export interface SubscriptionSource {
  /** Highest committed global position. */
  head(): bigint;
  /** Events matching `filter` with `after < globalPosition <= upTo`, in global order, at most `limit`. */
  read(after: bigint, upTo: bigint, limit: number, filter: EventFilter | undefined): RecordedEvent[];
}

export interface CatchUpSubscription extends Subscription {
  /** Told by the store that the log may have grown (own commit, or a poll saw a new head). */
  wake(head: bigint): void;
}

/**
 * A catch-up subscription over a log whose commits become visible in global-position order
 * (true of SQLite: one writer at a time, positions assigned inside the write transaction).
 * Hence reading "everything up to the head" never misses an event committed later.
 *
 * `position` is how far the log has been scanned and handled: every matching event at or below it
 * has been handed to the handler and the handler has finished. With a filter it can be ahead of
 * the last delivered event, so that idle subscriptions do not rescan non-matching events.
 */
export function createCatchUpSubscription(
  source: SubscriptionSource,
  options: SubscribeOptions,
  onStopped: (subscription: CatchUpSubscription) => void,
): CatchUpSubscription {
  const batchSize = options.batchSize ?? 500;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) {
    throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
  }
  let position = options.after;
  let running = false;
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
        const head = source.head();
        if (head <= position) return; // idle until the next wake
        const events = source.read(position, head, batchSize, options.filter);
        if (events.length > 0) {
          await options.handler(events);
          if (stopped) return;
        }
        const full = events.length === batchSize;
        position = full ? events[events.length - 1]!.globalPosition : head;
        settleWaiters();
        // Replaying a backlog: let I/O and timers run between batches even if the handler is sync.
        if (full) await new Promise<void>((resolve) => setImmediate(resolve));
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

  /** Starts the pump unless it runs; in a microtask, so no handler runs inside a caller's call. */
  const kick = (): void => {
    if (running || stopped) return;
    running = true;
    inflight = Promise.resolve().then(pump);
  };

  const subscription: CatchUpSubscription = {
    wake(head) {
      if (!running && !stopped && head > position) kick();
    },
    catchUp() {
      if (stopped) return Promise.reject(stoppedError());
      let target: bigint;
      try {
        target = source.head();
      } catch (error) {
        return Promise.reject(error);
      }
      if (target <= position) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
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
