/**
 * A pull interface over one `subscribeToAll` of `@eventstore/db-client`, keeping its events and its
 * `caughtUp` and checkpoint notices in the order the server sent them.
 *
 * The client's subscription is an object-mode Readable (a Transform fed by the gRPC stream). Events
 * are pushed into its buffer; `caughtUp` is emitted as an event, and checkpoints call the filter's
 * `checkpointReached`, both while earlier events may still wait in the buffer. A notice is
 * therefore recorded with the count of events pushed before it (taken + still buffered) and
 * handed out only once that many events have been taken. Reading in paused mode (`read()`) also
 * gives backpressure: a full buffer pauses the gRPC stream.
 */

export type FeedItem<E> =
  | { readonly kind: 'event'; readonly event: E }
  /** Every event committed before the subscription started has been sent (server >= 23.10). */
  | { readonly kind: 'caughtUp' }
  /** The server's filter has considered the log up to this commit position. */
  | { readonly kind: 'checkpoint'; readonly commit: bigint };

/** The part of the client's AllStreamSubscription that a feed uses. */
export interface SubscriptionLike<E> {
  read(): E | null;
  readonly readableLength: number;
  on(event: 'readable' | 'end' | 'close' | 'caughtUp', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  unsubscribe(): Promise<void>;
}

export interface Feed<E> {
  /** The next item, waiting for one; undefined once the feed has ended or is closed. Rejects with the stream's error. */
  next(): Promise<FeedItem<E> | undefined>;
  /** The next item if one is there now (never waits). Throws the stream's error. */
  poll(): FeedItem<E> | undefined;
  /** Cancels the subscription. Idempotent. */
  close(): Promise<void>;
}

/** `subscribe` opens the subscription, passing `onCheckpoint` as the filter's checkpointReached. */
export function createFeed<E>(subscribe: (onCheckpoint: (commit: bigint) => void) => SubscriptionLike<E>): Feed<E> {
  let taken = 0;
  const notices: { at: number; item: FeedItem<E> }[] = [];
  let ended = false;
  let closed = false;
  let failure: { error: unknown } | undefined;
  let wake: (() => void) | undefined;
  let closing: Promise<void> | undefined;

  const signal = (): void => {
    const resolve = wake;
    wake = undefined;
    resolve?.();
  };
  const notice = (item: FeedItem<E>): void => {
    notices.push({ at: taken + stream.readableLength, item });
    signal();
  };

  const stream: SubscriptionLike<E> = subscribe((commit) => notice({ kind: 'checkpoint', commit }));
  stream.on('caughtUp', () => notice({ kind: 'caughtUp' }));
  stream.on('readable', signal);
  stream.on('end', () => {
    ended = true;
    signal();
  });
  stream.on('close', () => {
    ended = true;
    signal();
  });
  // Always listened to: an 'error' without a listener would crash the process.
  stream.on('error', (error) => {
    failure ??= { error };
    signal();
  });

  const poll = (): FeedItem<E> | undefined => {
    if (closed) return undefined;
    if (notices.length > 0 && notices[0]!.at <= taken) return notices.shift()!.item;
    if (failure !== undefined) throw failure.error;
    const event = stream.read();
    if (event === null) return undefined;
    taken += 1;
    return { kind: 'event', event };
  };

  return {
    poll,
    async next() {
      for (;;) {
        const item = poll();
        if (item !== undefined) return item;
        if (closed || ended) return undefined;
        await new Promise<void>((resolve) => (wake = resolve));
      }
    },
    close() {
      closing ??= (async () => {
        closed = true;
        signal();
        await stream.unsubscribe().catch(() => undefined);
      })();
      return closing;
    },
  };
}
