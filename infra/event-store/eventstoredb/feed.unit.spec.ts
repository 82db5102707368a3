import { Transform } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createFeed, type FeedItem, type SubscriptionLike } from './feed.ts';

/**
 * A stand-in for the client's subscription (`streams/utils/Subscription.js` in
 * @eventstore/db-client 6.2.1): an object-mode Transform that pushes events, emits `caughtUp`, and
 * awaits the filter's checkpointReached, in the order of the server's messages.
 */
type Message = { event: string } | { caughtUp: true } | { checkpoint: bigint };

const fakeSubscription = (onCheckpoint: (commit: bigint) => void, highWaterMark = 16) => {
  const state = { unsubscribed: false };
  const stream = new Transform({
    objectMode: true,
    highWaterMark,
    transform(message: Message, _encoding, next) {
      if ('caughtUp' in message) {
        this.emit('caughtUp');
        return next();
      }
      if ('checkpoint' in message) {
        onCheckpoint(message.checkpoint);
        return next();
      }
      next(null, message.event);
    },
  });
  return Object.assign(stream, {
    state,
    unsubscribe: async () => {
      state.unsubscribed = true;
    },
  });
};

const drain = async (feed: { poll(): FeedItem<string> | undefined }): Promise<FeedItem<string>[]> => {
  const items: FeedItem<string>[] = [];
  for (let item = feed.poll(); item !== undefined; item = feed.poll()) items.push(item);
  return items;
};

describe('EventStoreDB feed', () => {
  it('hands out caughtUp and checkpoints after the events sent before them, even while they are buffered', async () => {
    let subscription!: ReturnType<typeof fakeSubscription>;
    const feed = createFeed<string>((onCheckpoint) => (subscription = fakeSubscription(onCheckpoint)));
    for (const message of [{ event: 'a' }, { event: 'b' }, { checkpoint: 700n }, { event: 'c' }, { caughtUp: true }, { event: 'd' }] as Message[]) {
      subscription.write(message);
    }
    await new Promise((resolve) => setImmediate(resolve));
    expect(await feed.next()).toEqual({ kind: 'event', event: 'a' });
    expect(await drain(feed)).toEqual([
      { kind: 'event', event: 'b' },
      { kind: 'checkpoint', commit: 700n },
      { kind: 'event', event: 'c' },
      { kind: 'caughtUp' },
      { kind: 'event', event: 'd' },
    ]);
  });

  it('keeps the order when notices arrive while the consumer is part-way through the buffer', async () => {
    let subscription!: ReturnType<typeof fakeSubscription>;
    const feed = createFeed<string>((onCheckpoint) => (subscription = fakeSubscription(onCheckpoint, 2)));
    const seen: FeedItem<string>[] = [];
    const consuming = (async () => {
      for (;;) {
        const item = await feed.next();
        if (item === undefined) return;
        seen.push(item);
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
    })();
    const messages: Message[] = [];
    for (let i = 0; i < 20; i++) messages.push({ event: `e${i}` }, ...(i % 5 === 4 ? [{ caughtUp: true } as const] : []));
    for (const message of messages) {
      if (!subscription.write(message)) await new Promise((resolve) => subscription.once('drain', resolve));
    }
    subscription.end();
    await consuming;
    const expected = messages.map((m) => ('event' in m ? { kind: 'event', event: m.event } : { kind: 'caughtUp' }));
    expect(seen).toEqual(expected);
  });

  it('waits for the next item, ends with the stream, and rejects with its error', async () => {
    let subscription!: ReturnType<typeof fakeSubscription>;
    const feed = createFeed<string>((onCheckpoint) => (subscription = fakeSubscription(onCheckpoint)));
    const waiting = feed.next();
    setTimeout(() => subscription.write({ event: 'late' }), 5);
    expect(await waiting).toEqual({ kind: 'event', event: 'late' });
    subscription.end();
    expect(await feed.next()).toBeUndefined();

    let failing!: ReturnType<typeof fakeSubscription>;
    const broken = createFeed<string>((onCheckpoint) => (failing = fakeSubscription(onCheckpoint)));
    const pending = broken.next();
    failing.destroy(new Error('connection lost'));
    await expect(pending).rejects.toThrow('connection lost');
  });

  it('close unsubscribes and ends a pending next', async () => {
    let subscription!: ReturnType<typeof fakeSubscription>;
    const feed = createFeed<string>((onCheckpoint) => (subscription = fakeSubscription(onCheckpoint)));
    const pending = feed.next();
    await feed.close();
    await feed.close();
    expect(await pending).toBeUndefined();
    expect(subscription.state.unsubscribed).toBe(true);
    expect(feed.poll()).toBeUndefined();
  });

  it('accepts the client subscription type', () => {
    // Compile-time check that the client's AllStreamSubscription fits SubscriptionLike.
    type ClientSubscription = import('@eventstore/db-client').AllStreamSubscription;
    const fits = (subscription: ClientSubscription): SubscriptionLike<unknown> => subscription;
    expect(typeof fits).toBe('function');
  });
});
