import { subscriptionBatchSize, subscriptionMaxBatchBytes, type RecordedEvent, type SubscribeOptions, type Subscription } from '../port.ts';
import type { Feed } from './feed.ts';

/**
 * What a live subscription needs from the EventStoreDB adapter. `R` is the client's resolved event.
 * All positions here are $all commit positions (not the port's global positions).
 */
export interface LiveSource<R> {
  /**
   * Opens a server-side filtered `subscribeToAll`: after `resume` (the last event received, an
   * exact log position) or, when undefined, from where the subscription's `after` starts.
   */
  open(resume: R | undefined): Promise<Feed<R>>;
  commitOf(raw: R): bigint;
  /** The events among `raws` that the subscription delivers (namespace data, filter, after `after`), converted. */
  convert(raws: readonly R[]): Promise<RecordedEvent[]>;
  /** Commit position at or below which nothing is to be delivered (from `after`); -1n when not known yet. */
  initialHandled(): Promise<bigint>;
  /** Commit position of the last event committed now that the subscription must deliver, if above `handled`. */
  lastToDeliver(handled: bigint): Promise<bigint | undefined>;
  /** Whether a failure of the server subscription is worth a new subscription (the server or the network). */
  retryable(error: unknown): boolean;
  /** What an event counts for against `maxBatchBytes` (its data and metadata). */
  bytesOf(event: RecordedEvent): number;
}

/** Consecutive runs of `events` holding at most `maxBytes` each (at least one event each). */
export const byteBatches = (events: readonly RecordedEvent[], maxBytes: number, bytesOf: (event: RecordedEvent) => number): RecordedEvent[][] => {
  const batches: RecordedEvent[][] = [];
  let bytes = 0;
  for (const event of events) {
    const size = bytesOf(event);
    const current = batches.at(-1);
    if (current === undefined || bytes + size > maxBytes) {
      batches.push([event]);
      bytes = size;
    } else {
      current.push(event);
      bytes += size;
    }
  }
  return batches;
};

export type LiveSubscription = Subscription;

/** The server ended a subscription (it never should): a new one is opened. */
export class FeedEndedError extends Error {
  override readonly name = 'FeedEndedError';
  constructor() {
    super('The EventStoreDB subscription ended');
  }
}

class HandlerFailure {
  constructor(readonly error: unknown) {}
}

const RETRY_MIN_MS = 100;
const RETRY_MAX_MS = 5000;

/**
 * A catch-up subscription on one `subscribeToAll` with a server-side filter. Events arrive in $all
 * order; the handler gets them in batches of at most `batchSize` (the events the feed has ready)
 * and `maxBatchBytes`, one call at a time. A failure of the server subscription (server restart, network) opens a new
 * one after the last handled event, with a growing pause; other failures, and a handler's throw,
 * stop the subscription and go to `onError`.
 *
 * `handled` is the commit position up to which every event to deliver has been handled. It moves
 * with the events received (delivered or filtered out on the client) and with the server's filter
 * checkpoints (which cover events the server filtered out). catchUp asks the source for the last
 * event to deliver committed now and waits until `handled` reaches it.
 */
export function createLiveSubscription<R>(
  source: LiveSource<R>,
  options: SubscribeOptions,
  onStopped: (subscription: LiveSubscription) => void,
): LiveSubscription {
  const batchSize = subscriptionBatchSize(options);
  const maxBatchBytes = subscriptionMaxBatchBytes(options);
  let handled: bigint | undefined;
  let resume: R | undefined;
  let stopped = false;
  let failure: { error: unknown } | undefined;
  let feed: Feed<R> | undefined;
  let cancelPause: (() => void) | undefined;
  const waiters: { target: bigint; resolve: () => void; reject: (error: unknown) => void }[] = [];

  const stoppedError = (): unknown => (failure !== undefined ? failure.error : new Error('The subscription is stopped'));

  const settle = (): void => {
    for (let i = waiters.length - 1; i >= 0; i--) {
      const waiter = waiters[i]!;
      if (handled !== undefined && waiter.target <= handled) {
        waiters.splice(i, 1);
        waiter.resolve();
      }
    }
  };

  const halt = (): void => {
    if (stopped) return;
    stopped = true;
    onStopped(subscription);
    cancelPause?.();
    void feed?.close();
    const error = stoppedError();
    for (const waiter of waiters.splice(0)) waiter.reject(error);
  };

  const fail = (error: unknown): void => {
    if (stopped) return;
    failure = { error };
    halt();
    try {
      options.onError?.(error);
    } catch {
      // onError must not take the process down; the subscription is already stopped.
    }
  };

  const pause = (ms: number): Promise<void> =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      cancelPause = () => {
        clearTimeout(timer);
        resolve();
      };
    });

  /** Reads and handles batches until the feed fails or the subscription stops. */
  const pump = async (current: Feed<R>): Promise<void> => {
    for (;;) {
      let item = await current.next();
      if (stopped) return;
      if (item === undefined) throw new FeedEndedError();
      const raws: R[] = [];
      let scanned = handled ?? -1n;
      let last: R | undefined;
      while (item !== undefined) {
        if (item.kind === 'event') {
          raws.push(item.event);
          last = item.event;
          const commit = source.commitOf(item.event);
          if (commit > scanned) scanned = commit;
        } else if (item.kind === 'checkpoint') {
          // The server has considered every event before this position (its pages start there).
          if (item.commit - 1n > scanned) scanned = item.commit - 1n;
        }
        if (raws.length >= batchSize) break;
        item = current.poll();
      }
      const events = raws.length > 0 ? await source.convert(raws) : [];
      if (stopped) return;
      for (const batch of byteBatches(events, maxBatchBytes, source.bytesOf)) {
        try {
          await options.handler(batch);
        } catch (error) {
          throw new HandlerFailure(error);
        }
        if (stopped) return;
      }
      if (last !== undefined) resume = last;
      handled = scanned;
      settle();
      if (raws.length >= batchSize) await new Promise<void>((resolve) => setImmediate(resolve));
    }
  };

  const run = async (): Promise<void> => {
    let delay = RETRY_MIN_MS;
    while (!stopped) {
      try {
        if (handled === undefined) {
          handled = await source.initialHandled();
          settle();
        }
        if (stopped) return;
        const current = await source.open(resume);
        feed = current;
        if (stopped) {
          await current.close();
          return;
        }
        await pump(current);
        return;
      } catch (error) {
        if (stopped) return;
        if (error instanceof HandlerFailure) return fail(error.error);
        if (!source.retryable(error)) return fail(error);
      } finally {
        await feed?.close();
        feed = undefined;
      }
      await pause(delay);
      delay = Math.min(delay * 2, RETRY_MAX_MS);
    }
  };

  let running: Promise<void> = Promise.resolve();

  const subscription: LiveSubscription = {
    async catchUp() {
      if (stopped) throw stoppedError();
      const target = await source.lastToDeliver(handled ?? -1n);
      if (stopped) throw stoppedError();
      if (target === undefined || (handled !== undefined && target <= handled)) return;
      await new Promise<void>((resolve, reject) => waiters.push({ target, resolve, reject }));
    },
    async stop() {
      halt();
      await running;
    },
  };

  running = Promise.resolve().then(run);
  return subscription;
}
