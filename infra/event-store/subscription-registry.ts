import { createAsyncCatchUpSubscription, type AsyncCatchUpSubscription, type AsyncSubscriptionSource } from './catch-up-subscription.ts';
import type { SubscribeOptions, Subscription } from './port.ts';
import { positiveMs } from './validation.ts';

/**
 * The live subscriptions of one SQLite or PostgreSQL store, and what wakes them: a wake right
 * after a commit of this store (or, on SQLite, of another thread of the process), and a poll for
 * commits of other processes (every `pollIntervalMs`, or as `poller` says). The poll runs only
 * while there are subscriptions, and its timers are unref'd: they do not keep the process alive.
 */
export interface SubscriptionRegistry {
  subscribe(options: SubscribeOptions): Subscription;
  /**
   * Wakes the subscriptions on the next turn of the event loop (coalesced). Given the category of
   * what this store just appended, it wakes only the subscriptions that may want it: one filtered
   * to other categories stays asleep (its next wake, or the poll, reads past those events).
   */
  wakeSoon(appendedCategory?: string): void;
  readonly size: number;
  /** Stops every subscription, waiting for their handlers in flight, and the poll. */
  stopAll(): Promise<void>;
}

export interface SubscriptionRegistryOptions {
  readonly source: AsyncSubscriptionSource;
  /** Default 25. */
  readonly pollIntervalMs?: number | undefined;
  /**
   * The position up to which the log is final now (what the subscriptions may read up to). A
   * failure (the store briefly unreachable, busy) is ignored: the next poll or commit retries.
   */
  readonly head: () => Promise<bigint> | bigint;
  /**
   * Told each head a wake read, and whether the wake was the poll's (the adapter's: which commits
   * it learnt of by polling, to pass them on to the other threads of its process).
   */
  readonly onHead?: (head: bigint, polled: boolean) => void;
  /**
   * What makes the poll run, started with the first subscription and closed after the last one.
   * Default: every `pollIntervalMs`. (The SQLite store's: a watch of its `-wal` file, commit-watch.ts.)
   */
  readonly poller?: (poll: () => void) => { close(): void };
}

export const createSubscriptionRegistry = (options: SubscriptionRegistryOptions): SubscriptionRegistry => {
  const pollIntervalMs = positiveMs(options.pollIntervalMs ?? 25, 'pollIntervalMs');
  /** Each subscription, with the categories its filter is limited to (undefined: any). */
  const subscriptions = new Map<AsyncCatchUpSubscription, ReadonlySet<string> | undefined>();
  const startPoller =
    options.poller ??
    ((poll: () => void) => {
      const timer = setInterval(poll, pollIntervalMs).unref();
      return { close: () => clearInterval(timer) };
    });
  let poller: { close(): void } | undefined;
  let scheduled = false;
  /** Categories appended since the last wake, or 'all' when any subscription may want what happened. */
  let pending: Set<string> | 'all' = new Set();
  /** Whether the poll asked for a wake since the last head was read. */
  let polledPending = false;
  let waking = false;
  /** A wake asked for while the head was being read: that read may predate the commit. */
  let again = false;
  let stopped = false;

  const wake = async (): Promise<void> => {
    scheduled = false;
    if (waking) {
      again = true;
      return;
    }
    waking = true;
    try {
      do {
        again = false;
        if (stopped || subscriptions.size === 0) return;
        const woken = pending;
        pending = new Set();
        const polled = polledPending;
        polledPending = false;
        let head: bigint;
        try {
          head = await options.head();
        } catch {
          return;
        }
        options.onHead?.(head, polled);
        for (const [subscription, categories] of subscriptions) {
          if (woken === 'all' || categories === undefined || [...woken].some((category) => categories.has(category))) subscription.wake(head);
        }
      } while (again);
    } finally {
      waking = false;
    }
  };

  const wakeAll = (): void => {
    pending = 'all';
    void wake();
  };

  const unregister = (subscription: AsyncCatchUpSubscription): void => {
    subscriptions.delete(subscription);
    if (subscriptions.size === 0 && poller !== undefined) {
      poller.close();
      poller = undefined;
    }
  };

  return {
    subscribe(subscribeOptions) {
      const subscription = createAsyncCatchUpSubscription(options.source, subscribeOptions, unregister);
      const categories = subscribeOptions.filter?.categories;
      subscriptions.set(subscription, categories === undefined ? undefined : new Set(categories));
      poller ??= startPoller(() => {
        polledPending = true;
        wakeAll();
      });
      return subscription;
    },
    wakeSoon(appendedCategory) {
      if (stopped || subscriptions.size === 0) return;
      if (appendedCategory === undefined) pending = 'all';
      else if (pending !== 'all') pending.add(appendedCategory);
      if (scheduled) return;
      scheduled = true;
      setImmediate(() => void wake());
    },
    get size() {
      return subscriptions.size;
    },
    async stopAll() {
      stopped = true;
      await Promise.all([...subscriptions.keys()].map((subscription) => subscription.stop()));
      poller?.close();
      poller = undefined;
    },
  };
};
