import {
  BACKWARDS,
  END,
  FORWARDS,
  START,
  eventTypeFilter,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type EventStoreDBClient,
  type Position,
} from '@eventstore/db-client';
import type { EventFilter } from '../port.ts';
import { isUnavailable } from './errors.ts';
import { createFeed, type Feed } from './feed.ts';
import { FeedEndedError } from './live-subscription.ts';
import { serverFilterOf, type EsdbRecordedEvent } from './mapping.ts';

/** Where a read of $all starts: an event's exact log position, or the start of the log. */
export type Start = Position | 'start';

/** How many exact log positions (of events read or written here) are remembered, to skip checking them. */
const KNOWN_POSITIONS = 10_000;
/** Objects buffered by a subscription before the gRPC stream is paused. */
const FEED_HIGH_WATER_MARK = 512;

/**
 * Reads of $all. The 6.x client's `readAll` takes no filter, so forward reads go through
 * `subscribeToAll` with a server-side filter (a feed); a bounded read ends at the subscription's
 * `caughtUp` notice (EventStoreDB >= 23.10). Backward reads (the last event of something) use
 * `readAll` and check every event on the client.
 */
export const createAllReads = (client: EventStoreDBClient, namespace: string) => {
  const knownPositions = new Set<bigint>();

  const remember = (commit: bigint): void => {
    if (knownPositions.size >= KNOWN_POSITIONS) knownPositions.delete(knownPositions.values().next().value!);
    knownPositions.add(commit);
  };

  /** A server-side filtered subscription to $all, after `from` (exclusive), as a feed. */
  const openFeed = (from: Start, filter: EventFilter | undefined): Feed<AllStreamResolvedEvent> => {
    const server = serverFilterOf(namespace, filter);
    const makeFilter = server.filterOn === 'streamName' ? streamNameFilter : eventTypeFilter;
    return createFeed<AllStreamResolvedEvent>((onCheckpoint) =>
      client.subscribeToAll(
        {
          fromPosition: from === 'start' ? START : from,
          filter: makeFilter({
            regex: server.regex,
            checkpointInterval: 1,
            checkpointReached: (_subscription, position) => onCheckpoint(position.commit),
          }),
        },
        { highWaterMark: FEED_HIGH_WATER_MARK },
      ),
    );
  };

  return {
    remember,
    openFeed,

    /**
     * A bounded forward read of $all: the events the server filter selects after `from`, handed to
     * `visit` until it returns false or the subscription reports it has caught up with the log.
     */
    async scan(from: Start, filter: EventFilter | undefined, visit: (event: EsdbRecordedEvent) => boolean): Promise<void> {
      const feed = openFeed(from, filter);
      try {
        for (;;) {
          const item = await feed.next();
          if (item === undefined) throw new FeedEndedError();
          if (item.kind === 'caughtUp') return;
          if (item.kind === 'event' && item.event.event !== undefined && !visit(item.event.event)) return;
        }
      } finally {
        await feed.close();
      }
    },

    /**
     * The commit position of the last event of $all (read backwards from its end) that satisfies
     * `accept`, or undefined when none is above `floor()` (read again on every event: it may move).
     */
    async findLast(accept: (event: EsdbRecordedEvent) => boolean, floor: () => bigint): Promise<bigint | undefined> {
      let from: Position | typeof END = END;
      let pageSize = 32;
      for (;;) {
        let count = 0;
        let oldest: Position | undefined;
        for await (const resolved of client.readAll({ direction: BACKWARDS, fromPosition: from, maxCount: pageSize })) {
          count += 1;
          const event = resolved.event;
          if (event === undefined) continue;
          oldest = event.position;
          if (from !== END && event.position.commit >= from.commit) continue;
          if (event.position.commit <= floor()) return undefined;
          if (accept(event)) return event.position.commit;
        }
        if (count < pageSize || oldest === undefined) return undefined; // the start of the log
        from = oldest;
        pageSize = Math.min(pageSize * 4, 1024);
      }
    },

    /**
     * Where a read "after" commit position `floor` starts on the server: the exact position of the
     * event there (the server rejects positions that are not an event's), else the log's start.
     */
    async startAfter(floor: bigint): Promise<Start> {
      const position = { commit: floor, prepare: floor };
      if (knownPositions.has(floor)) return position;
      try {
        for await (const resolved of client.readAll({ direction: FORWARDS, fromPosition: position, maxCount: 1 })) {
          const found = resolved.event?.position;
          if (found !== undefined && found.commit === floor && found.prepare === floor) {
            remember(floor);
            return position;
          }
          break;
        }
      } catch (error) {
        if (isUnavailable(error)) throw error;
        // e.g. "invalid position": not an event's position; read from the start instead.
      }
      return 'start';
    },

    /** Reaches the server (the last event of the log, if any). */
    async ping(): Promise<void> {
      for await (const _ of client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
        // reaching the server is the point
      }
    },
  };
};

export type AllReads = ReturnType<typeof createAllReads>;

/** A feed that never delivers (a filter with an empty list): ends only when closed. */
export const idleFeed = (): Feed<AllStreamResolvedEvent> => {
  let release: (() => void) | undefined;
  const closed = new Promise<void>((resolve) => (release = resolve));
  return {
    next: async () => {
      await closed;
      return undefined;
    },
    poll: () => undefined,
    close: async () => release?.(),
  };
};
