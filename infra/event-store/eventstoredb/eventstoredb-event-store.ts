import { randomUUID } from 'node:crypto';
import {
  BACKWARDS,
  END,
  ErrorType,
  EventStoreDBClient,
  FORWARDS,
  START,
  StreamNotFoundError,
  WrongExpectedVersionError,
  convertToCommandError,
  eventTypeFilter,
  isCommandError,
  streamNameFilter,
  type AllStreamResolvedEvent,
  type EventData,
  type JSONType,
  type Position,
  type RecordedEvent as EsdbClientRecordedEvent,
} from '@eventstore/db-client';
import {
  readAllLimit,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type EventFilter,
  type EventStore,
  type RecordedEvent,
  newEventId,
} from '../port.ts';
import { createFeed, type Feed } from './feed.ts';
import { FeedEndedError, createLiveSubscription, type LiveSource, type LiveSubscription } from './live-subscription.ts';
import {
  CHECKPOINT_EVENT,
  CHECKPOINT_NAMED_EVENT,
  CHECKPOINT_REGISTRY_STREAM,
  ORIGIN_EVENT,
  ORIGIN_STREAM,
  checkpointStream,
  commitOf,
  encodeMetadata,
  isDataEvent,
  matchesFilter,
  matchesNothing,
  parsePosition,
  satisfiesExpected,
  serverFilterOf,
  streamNames,
  toCommitPosition,
  toExpectedRevision,
  toGlobalPosition,
  toRecordedEvent,
  validateEventId,
  validateNamespace,
  validateStreamName,
  versionOfRevision,
  type EsdbRecordedEvent,
} from './mapping.ts';

export interface EventStoreDbEventStoreOptions {
  /** An EventStoreDB / KurrentDB connection string, e.g. `esdb://127.0.0.1:2113?tls=false`. */
  readonly connectionString: string;
  /**
   * Prefix of every stream name (`EVENTSTORE_NAMESPACE`), e.g. `relay_`: several Relays (or test
   * runs) share one server, each seeing only its own streams. Default '' (every non-system stream).
   */
  readonly namespace?: string;
}

type Start = Position | 'start';

/** How many exact log positions (of events read or written here) are remembered, to skip checking them. */
const KNOWN_POSITIONS = 10_000;
/** Objects buffered by a subscription before the gRPC stream is paused. */
const FEED_HIGH_WATER_MARK = 512;

/**
 * The event store on EventStoreDB 23.10+ / KurrentDB, through `@eventstore/db-client` 6.x (gRPC).
 *
 * - Streams: a port stream `s` is the ESDB stream `<namespace>s`; port version v is ESDB revision
 *   v-1. An append is one `appendToStream` with the expected revision (atomic, one stream).
 * - Positions: a global position is the event's $all commit position minus the namespace's
 *   origin (see mapping.ts), so the first event is at 1n. Reading or subscribing "after P" starts
 *   the server at the exact log position of the event at P when there is one (checked once, then
 *   remembered), else at the start of the log; events at or below P are skipped on the client.
 * - readAll, subscriptions and the origin's discovery read $all through `subscribeToAll` with a
 *   server-side stream-name (or event-type) regex filter: the 6.x client's `readAll` takes no
 *   filter. A bounded read ends at the subscription's `caughtUp` notice (EventStoreDB >= 23.10).
 *   Client-side checks then apply the exact filter, since/until on the effective recordedAt,
 *   and drop system (`$`) events and Relay's own `@relay-` streams.
 * - headPosition and catchUp read $all backwards from its end (no server filter there either),
 *   so their cost grows with the events written after the last one they look for, including
 *   other namespaces' events on a shared server.
 * - recordedAt: ESDB's `created` (the server's clock), or an imported time carried in the
 *   metadata under `$relay.recordedAt` (stripped on read).
 * - Checkpoints: one stream per name (`@relay-checkpoint-<name>`, maxCount 1) plus a registry
 *   stream listing the names (`@relay-checkpoints`), both inside the namespace.
 * - Errors: connection loss, server unavailability, timeouts, cancellations and leader changes
 *   reject with EventStoreUnavailableError; after close() every method does.
 */
export function createEventStoreDbEventStore(options: EventStoreDbEventStoreOptions): EventStore {
  const names = streamNames(validateNamespace(options.namespace ?? ''));
  const client = EventStoreDBClient.connectionString(options.connectionString);

  let closed = false;
  let closing: Promise<void> | undefined;
  const subscriptions = new Set<LiveSubscription>();
  const knownPositions = new Set<bigint>();
  const registeredCheckpoints = new Set<string>();
  let origin: bigint | undefined;
  let loadingOrigin: Promise<bigint | undefined> | undefined;

  const unavailable = () => new EventStoreUnavailableError('The EventStoreDB event store is closed');

  /** Runs an operation, mapping connection failures (and anything after close) to EventStoreUnavailableError. */
  const run = async <T>(operation: () => Promise<T>): Promise<T> => {
    if (closed) throw unavailable();
    let result: T;
    try {
      result = await operation();
    } catch (error) {
      if (closed && !(error instanceof ExpectedVersionConflictError)) throw unavailable();
      throw toStoreError(error);
    }
    // close() cancels the client's streams, which may then end early instead of failing.
    if (closed) throw unavailable();
    return result;
  };

  const remember = (commit: bigint): void => {
    if (knownPositions.size >= KNOWN_POSITIONS) knownPositions.delete(knownPositions.values().next().value!);
    knownPositions.add(commit);
  };

  // ---- reading streams -------------------------------------------------------------------------

  /** Every event of an ESDB stream, oldest first ([] when it does not exist). */
  const readRawStream = async (streamId: string): Promise<EsdbRecordedEvent[]> => {
    const events: EsdbRecordedEvent[] = [];
    try {
      for await (const resolved of client.readStream(streamId, { direction: FORWARDS, fromRevision: START })) {
        if (resolved.event !== undefined) events.push(resolved.event as EsdbClientRecordedEvent);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  };

  /** One event of an ESDB stream: the last one (`END`), or the one at a revision. */
  const readRawEvent = async (streamId: string, at: bigint | typeof END): Promise<EsdbRecordedEvent | undefined> => {
    try {
      const read = client.readStream(streamId, {
        direction: at === END ? BACKWARDS : FORWARDS,
        fromRevision: at,
        maxCount: 1,
      });
      for await (const resolved of read) {
        if (resolved.event !== undefined) return resolved.event as EsdbClientRecordedEvent;
      }
      return undefined;
    } catch (error) {
      if (error instanceof StreamNotFoundError) return undefined;
      throw error;
    }
  };

  // ---- $all ------------------------------------------------------------------------------------

  /** A server-side filtered subscription to $all, after `from` (exclusive), as a feed. */
  const openFeed = (from: Start, filter: EventFilter | undefined): Feed<AllStreamResolvedEvent> => {
    const server = serverFilterOf(names.namespace, filter);
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

  /**
   * A bounded forward read of $all: the events the server filter selects after `from`, handed to
   * `visit` until it returns false or the subscription reports it has caught up with the log.
   */
  const scan = async (from: Start, filter: EventFilter | undefined, visit: (event: EsdbRecordedEvent) => boolean): Promise<void> => {
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
  };

  /**
   * The commit position of the last event of $all (read backwards from its end) that satisfies
   * `accept`, or undefined when none is above `floor()` (read again on every event: it may move).
   */
  const findLast = async (accept: (event: EsdbRecordedEvent) => boolean, floor: () => bigint): Promise<bigint | undefined> => {
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
  };

  /**
   * Where a read "after" commit position `floor` starts on the server: the exact position of the
   * event there (the server rejects positions that are not an event's), else the log's start.
   */
  const startAfter = async (floor: bigint): Promise<Start> => {
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
  };

  const isData = (event: EsdbRecordedEvent): boolean => isDataEvent(names, event.streamId, event.type);

  // ---- origin ----------------------------------------------------------------------------------

  const readStoredOrigin = async (): Promise<bigint | undefined> => {
    const event = await readRawEvent(names.qualify(ORIGIN_STREAM), END);
    return event === undefined ? undefined : parsePosition((event.data as { commit?: unknown } | null)?.commit);
  };

  /** The origin: stored, else derived from the namespace's first event and stored (first writer wins). */
  const loadOrigin = async (): Promise<bigint | undefined> => {
    let found = await readStoredOrigin();
    if (found === undefined) {
      let first: bigint | undefined;
      await scan('start', undefined, (event) => {
        if (!isData(event)) return true;
        first = event.position!.commit;
        return false;
      });
      if (first === undefined) return undefined;
      try {
        await client.appendToStream(
          names.qualify(ORIGIN_STREAM),
          [{ id: randomUUID(), contentType: 'application/json', type: ORIGIN_EVENT, data: { commit: String(first - 1n) }, metadata: undefined }],
          { expectedRevision: 'no_stream' },
        );
        found = first - 1n;
      } catch (error) {
        if (!(error instanceof WrongExpectedVersionError)) throw error;
        found = await readStoredOrigin();
        if (found === undefined) throw new Error(`The origin stream ${names.qualify(ORIGIN_STREAM)} holds no valid origin`);
      }
    }
    origin = found;
    return found;
  };

  /** The namespace's origin, undefined while the namespace has no event. */
  const resolveOrigin = (): Promise<bigint | undefined> => {
    if (origin !== undefined) return Promise.resolve(origin);
    loadingOrigin ??= loadOrigin().finally(() => (loadingOrigin = undefined));
    return loadingOrigin;
  };

  /** The origin, for a caller that knows an event exists (it read or wrote one). */
  const requireOrigin = async (): Promise<bigint> => {
    // A load already in flight may have scanned before the caller's event was committed: a
    // second call joins a load that started after it, or starts one.
    const found = (await resolveOrigin()) ?? (await resolveOrigin());
    if (found === undefined) throw new Error('EventStoreDB: the namespace has events but its first event could not be found');
    return found;
  };

  const convert = (events: readonly EsdbRecordedEvent[], at: bigint): RecordedEvent[] =>
    events.flatMap((event) => toRecordedEvent(names, event, at) ?? []);

  // ---- checkpoints -----------------------------------------------------------------------------

  const readRegistry = async (): Promise<Set<string>> => {
    const registered = new Set<string>();
    for (const event of await readRawStream(names.qualify(CHECKPOINT_REGISTRY_STREAM))) {
      const name = (event.data as { name?: unknown } | null)?.name;
      if (typeof name === 'string') registered.add(name);
    }
    return registered;
  };

  const readCheckpointOf = async (name: string): Promise<bigint | undefined> => {
    const event = await readRawEvent(names.qualify(checkpointStream(name)), END);
    return event === undefined ? undefined : parsePosition((event.data as { position?: unknown } | null)?.position);
  };

  const jsonEvent = (type: string, data: unknown): EventData => ({
    id: randomUUID(),
    contentType: 'application/json',
    type,
    data: data as JSONType,
    metadata: undefined,
  });

  // ---- subscriptions ---------------------------------------------------------------------------

  const liveSource = (after: bigint, filter: EventFilter | undefined): LiveSource<AllStreamResolvedEvent> => {
    const nothing = matchesNothing(filter);
    return {
      async open(resume) {
        if (closed) throw unavailable();
        if (nothing) return idleFeed();
        let from: Start = 'start';
        if (resume?.event !== undefined) from = resume.event.position;
        else if (after > 0n) {
          const at = await resolveOrigin();
          if (at !== undefined) from = await startAfter(toCommitPosition(after, at));
        }
        return openFeed(from, filter);
      },
      commitOf: (resolved) => resolved.event?.position.commit ?? resolved.commitPosition ?? -1n,
      async convert(raws) {
        const candidates = raws.flatMap((resolved) => (resolved.event !== undefined && isData(resolved.event) ? [resolved.event] : []));
        if (candidates.length === 0) return [];
        const at = await requireOrigin();
        return convert(candidates, at).filter((event) => event.globalPosition > after && matchesFilter(filter, event));
      },
      async initialHandled() {
        const at = await resolveOrigin();
        return at === undefined ? -1n : toCommitPosition(after, at);
      },
      lastToDeliver: (handled) =>
        run(async () => {
          if (nothing) return undefined;
          const at = await resolveOrigin();
          if (at === undefined) return undefined; // nothing was committed before the call
          const floor = toCommitPosition(after, at);
          return findLast(
            (event) => {
              const recorded = toRecordedEvent(names, event, at);
              return recorded !== undefined && matchesFilter(filter, recorded);
            },
            () => (handled > floor ? handled : floor),
          );
        }),
      retryable: (error) => !closed && (error instanceof FeedEndedError || isUnavailable(error)),
    };
  };

  return {
    kind: 'eventstoredb',

    async readStream(streamName) {
      validateStreamName(streamName);
      return run(async () => {
        const raw = await readRawStream(names.qualify(streamName));
        if (raw.length === 0) return { version: 0n, events: [] };
        const at = await requireOrigin();
        for (const event of raw) remember(commitOf(event));
        return { version: raw.at(-1)!.revision + 1n, events: convert(raw, at) };
      });
    },

    async appendToStream(streamName, events, appendOptions) {
      if (closed) throw unavailable();
      validateStreamName(streamName);
      const expected = appendOptions?.expectedVersion ?? 'any';
      const expectedRevision = toExpectedRevision(expected);
      const proposed: EventData[] = events.map((event) => {
        if (typeof event.type !== 'string' || event.type === '' || event.type.startsWith('$')) {
          throw new RangeError(`Invalid event type ${JSON.stringify(event.type)}: a non-empty string not starting with '$'`);
        }
        return {
          id: event.id === undefined ? newEventId() : validateEventId(event.id),
          contentType: 'application/json',
          type: event.type,
          data: (event.data ?? null) as JSONType,
          metadata: encodeMetadata(event.metadata, event.recordedAt) as JSONType,
        };
      });
      const streamId = names.qualify(streamName);
      return run(async () => {
        if (proposed.length === 0) {
          // ESDB would accept an empty append; the check is done here, on the stream's last event.
          const last = await readRawEvent(streamId, END);
          const version = last === undefined ? 0n : last.revision + 1n;
          if (!satisfiesExpected(expected, version)) throw new ExpectedVersionConflictError(streamName, expected, version);
          if (last === undefined) return { nextVersion: 0n, lastPosition: 0n };
          return { nextVersion: version, lastPosition: toGlobalPosition(commitOf(last), await requireOrigin()) };
        }
        let revision: bigint;
        try {
          revision = (await client.appendToStream(streamId, proposed, { expectedRevision })).nextExpectedRevision;
        } catch (error) {
          if (error instanceof WrongExpectedVersionError) {
            throw new ExpectedVersionConflictError(streamName, expected, versionOfRevision(error.actualVersion));
          }
          throw error;
        }
        // The append's reply carries a position that is not the last event's for every server
        // version: the last event is read back for its exact position.
        const last = await readRawEvent(streamId, revision);
        if (last === undefined) throw new Error(`Appended to ${streamName}, but its event at revision ${revision} cannot be read`);
        const commit = commitOf(last);
        remember(commit);
        return { nextVersion: versionOfRevision(revision), lastPosition: toGlobalPosition(commit, await requireOrigin()) };
      });
    },

    async readAll(readOptions) {
      const limit = readAllLimit(readOptions);
      const after = validAfter(readOptions?.after ?? 0n);
      const filter = validFilter(readOptions?.filter);
      return run(async () => {
        if (limit === 0 || matchesNothing(filter)) return [];
        const at = await resolveOrigin();
        if (at === undefined) return [];
        const floor = toCommitPosition(after, at);
        const from = after === 0n ? 'start' : await startAfter(floor);
        const found: RecordedEvent[] = [];
        await scan(from, filter, (event) => {
          if (event.position === undefined || event.position.commit <= floor) return true;
          const recorded = toRecordedEvent(names, event, at);
          if (recorded !== undefined && matchesFilter(filter, recorded)) {
            found.push(recorded);
            remember(event.position.commit);
          }
          return found.length < limit;
        });
        return found;
      });
    },

    subscribe(subscribeOptions) {
      if (closed) throw unavailable();
      const after = validAfter(subscribeOptions.after);
      const filter = validFilter(subscribeOptions.filter);
      const subscription = createLiveSubscription(liveSource(after, filter), subscribeOptions, (stopped) => subscriptions.delete(stopped));
      subscriptions.add(subscription);
      return subscription;
    },

    headPosition() {
      return run(async () => {
        const last = await findLast(isData, () => -1n);
        if (last === undefined) return 0n;
        remember(last);
        return toGlobalPosition(last, await requireOrigin());
      });
    },

    readCheckpoint(name) {
      return run(() => readCheckpointOf(validCheckpointName(name)));
    },

    async storeCheckpoint(name, position) {
      validCheckpointName(name);
      if (typeof position !== 'bigint' || position < 0n) throw new RangeError(`Invalid checkpoint position ${String(position)}`);
      await run(async () => {
        if (!registeredCheckpoints.has(name)) {
          if (!(await readRegistry()).has(name)) {
            await client.appendToStream(names.qualify(CHECKPOINT_REGISTRY_STREAM), [jsonEvent(CHECKPOINT_NAMED_EVENT, { name })]);
          }
          registeredCheckpoints.add(name);
        }
        const streamId = names.qualify(checkpointStream(name));
        const { nextExpectedRevision } = await client.appendToStream(streamId, [jsonEvent(CHECKPOINT_EVENT, { position: String(position) })]);
        // Only the last position matters: let scavenges drop the older ones.
        if (nextExpectedRevision === 0n) await client.setStreamMetadata(streamId, { maxCount: 1 });
      });
    },

    listCheckpoints() {
      return run(async () => {
        const checkpoints = new Map<string, bigint>();
        for (const name of [...(await readRegistry())].sort()) {
          const position = await readCheckpointOf(name);
          if (position !== undefined) checkpoints.set(name, position);
        }
        return checkpoints;
      });
    },

    async ping() {
      await run(async () => {
        for await (const _ of client.readAll({ direction: BACKWARDS, fromPosition: END, maxCount: 1 })) {
          // reaching the server is the point
        }
      });
    },

    close() {
      closing ??= (async () => {
        closed = true;
        await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
        try {
          await client.dispose();
        } catch (error) {
          throw toStoreError(error);
        }
      })();
      return closing;
    },
  };
}

/** A feed that never delivers (a filter with an empty list): ends only when closed. */
const idleFeed = (): Feed<AllStreamResolvedEvent> => {
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

const validAfter = (after: bigint): bigint => {
  if (typeof after !== 'bigint' || after < 0n) throw new RangeError(`after must be a bigint >= 0n, got ${String(after)}`);
  return after;
};

const validFilter = (filter: EventFilter | undefined): EventFilter | undefined => {
  for (const [key, date] of [
    ['since', filter?.since],
    ['until', filter?.until],
  ] as const) {
    if (date !== undefined && (!(date instanceof Date) || Number.isNaN(date.getTime()))) {
      throw new RangeError(`filter.${key} is an invalid Date`);
    }
  }
  return filter;
};

const validCheckpointName = (name: string): string => {
  if (typeof name !== 'string' || name === '') throw new RangeError('A checkpoint name must be a non-empty string');
  return name;
};

const unavailableTypes: ReadonlySet<string> = new Set([
  ErrorType.UNAVAILABLE,
  ErrorType.CANCELLED,
  ErrorType.DEADLINE_EXCEEDED,
  ErrorType.TIMEOUT,
  ErrorType.NOT_LEADER,
]);

/** Whether an error means "the server cannot serve now": connection, availability, timeouts, leader change. */
export const isUnavailable = (error: unknown): boolean => {
  if (error instanceof EventStoreUnavailableError || error instanceof FeedEndedError) return true;
  if (!(error instanceof Error)) return false;
  // Raw gRPC errors (e.g. from the server-features call before an append) are converted first.
  const converted = convertToCommandError(error);
  return isCommandError(converted) && unavailableTypes.has(converted.type);
};

/** Unavailability becomes EventStoreUnavailableError; conflicts, bad input and other errors pass unchanged. */
const toStoreError = (error: unknown): unknown => {
  if (error instanceof EventStoreUnavailableError || error instanceof ExpectedVersionConflictError) return error;
  if (error instanceof RangeError || error instanceof TypeError) return error;
  if (!isUnavailable(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new EventStoreUnavailableError(`EventStoreDB event store failure: ${message}`, { cause: error });
};
