import { END, EventStoreDBClient, WrongExpectedVersionError, type EventData, type JSONType } from '@eventstore/db-client';
import {
  countAllLimit,
  readAllLimit,
  readAllMaxBytes,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type EventStore,
  type EventTagger,
  type EventFilter,
  type RecordedEvent,
  newEventId,
} from '../port.ts';
import { checkedVault, checkKeyChanges, type StandaloneKeyVault } from '../data-keys.ts';
import { validTagger, tagsOf } from '../tags.ts';
import { filterMatchesNothing, validFilter } from '../validation.ts';
import { createAllReads } from './all-reads.ts';
import { createCheckpoints } from './checkpoints.ts';
import { createEsdbKeys } from './data-keys.ts';
import { toStoreError } from './errors.ts';
import { createLiveSource, matchingEvent } from './live-source.ts';
import { createLiveSubscription, type LiveSubscription } from './live-subscription.ts';
import {
  commitOf,
  encodeMetadata,
  eventBytes,
  isDataEvent,
  satisfiesExpected,
  streamNames,
  toCommitPosition,
  toExpectedRevision,
  toGlobalPosition,
  toRecordedEvent,
  validateEventId,
  validateNamespace,
  validateStreamName,
  versionOfRevision,
} from './mapping.ts';
import { createOrigin } from './origin.ts';
import { createStreamReads } from './stream-reads.ts';

export { isUnavailable } from './errors.ts';

export interface EventStoreDbEventStoreOptions {
  /** An EventStoreDB / KurrentDB connection string, e.g. `esdb://127.0.0.1:2113?tls=false`. */
  readonly connectionString: string;
  /**
   * Prefix of every stream name (`EVENTSTORE_NAMESPACE`), e.g. `relay_`: several Relays (or test
   * runs) share one server, each seeing only its own streams. Default '' (every non-system stream).
   */
  readonly namespace?: string;
  /** Derives the tags of appended events, kept in their metadata (mapping.ts, TAGS_KEY). */
  readonly tagger?: EventTagger;
  /**
   * Where the data keys live (ESDB has no place for them): e.g. `createPostgresKeyVault(...)`. The
   * caller owns it (closes it). Without one, `keys` and key changes throw NoKeyVaultError.
   */
  readonly vault?: StandaloneKeyVault;
}

/**
 * The event store on EventStoreDB 23.10+ / KurrentDB, through `@eventstore/db-client` 6.x (gRPC).
 *
 * - Streams: a port stream `s` is the ESDB stream `<namespace>s`; port version v is ESDB revision
 *   v-1. An append is one `appendToStream` with the expected revision (atomic, one stream).
 * - Positions: a global position is the event's $all commit position minus the namespace's
 *   origin (origin.ts), so the first event is at 1n. Reading or subscribing "after P" starts the
 *   server at the exact log position of the event at P when there is one (checked once, then
 *   remembered), else at the start of the log; events at or below P are skipped on the client.
 * - readAll, subscriptions and the origin's discovery read $all through `subscribeToAll` with a
 *   server-side stream-name (or event-type) regex filter (all-reads.ts). Client-side checks then
 *   apply the exact filter, since/until on the effective recordedAt, the tags, and drop system
 *   (`$`) events and Relay's own `@relay-` streams. Pages and handler batches are cut by the
 *   bytes of the events' data and metadata as JSON.
 * - headPosition and catchUp read $all backwards from its end (no server filter there either),
 *   so their cost grows with the events written after the last one they look for, including
 *   other namespaces' events on a shared server.
 * - recordedAt: ESDB's `created` (the server's clock), or an imported time carried in the
 *   metadata under `$relay.recordedAt`; tags under `$relay.tags` (both stripped on read). The
 *   server never filters on tags: every tag check is on the client, after the server's filters.
 * - Checkpoints: checkpoints.ts. Data keys: in `vault`, around the append, not atomically with it
 *   (data-keys.ts).
 * - Errors: connection loss, server unavailability, timeouts, cancellations and leader changes
 *   reject with EventStoreUnavailableError; after close() every method does.
 */
export function createEventStoreDbEventStore(options: EventStoreDbEventStoreOptions): EventStore {
  const names = streamNames(validateNamespace(options.namespace ?? ''));
  const tagger = validTagger(options.tagger);
  const client = EventStoreDBClient.connectionString(options.connectionString);
  const streams = createStreamReads(client);
  const all = createAllReads(client, names.namespace);
  const origin = createOrigin(client, names, streams, all);
  const checkpoints = createCheckpoints(client, names, streams);
  const keys = createEsdbKeys(options.vault);

  let closed = false;
  let closing: Promise<void> | undefined;
  const subscriptions = new Set<LiveSubscription>();

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

  const context = { names, all, origin, tagger, closed: () => closed, unavailable, run };

  /** Visits the events a read after `after` finds (with their commit positions), in order, while `visit` says true. */
  const scanMatching = async (after: bigint, filter: EventFilter | undefined, visit: (recorded: RecordedEvent, commit: bigint) => boolean): Promise<void> => {
    const at = await origin.resolve();
    if (at === undefined) return;
    const floor = toCommitPosition(after, at);
    const from = after === 0n ? 'start' : await all.startAfter(floor);
    await all.scan(from, filter, (event) => {
      if (event.position === undefined || event.position.commit <= floor) return true;
      const recorded = matchingEvent(context, filter, event, at);
      return recorded === undefined ? true : visit(recorded, event.position.commit);
    });
  };

  return {
    kind: 'eventstoredb',

    async readStream(streamName) {
      validateStreamName(streamName);
      return run(async () => {
        const raw = await streams.all(names.qualify(streamName));
        if (raw.length === 0) return { version: 0n, events: [] };
        const at = await origin.require();
        for (const event of raw) all.remember(commitOf(event));
        return { version: raw.at(-1)!.revision + 1n, events: raw.flatMap((event) => toRecordedEvent(names, event, at) ?? []) };
      });
    },

    async appendToStream(streamName, events, appendOptions) {
      if (closed) throw unavailable();
      validateStreamName(streamName);
      const expected = appendOptions?.expectedVersion ?? 'any';
      const expectedRevision = toExpectedRevision(expected);
      const keyChanges = checkKeyChanges(appendOptions?.keys);
      keys.require(keyChanges);
      const proposed: EventData[] = events.map((event) => {
        if (typeof event.type !== 'string' || event.type === '' || event.type.startsWith('$')) {
          throw new RangeError(`Invalid event type ${JSON.stringify(event.type)}: a non-empty string not starting with '$'`);
        }
        const tags = tagger === undefined ? undefined : { version: tagger.version, tags: tagsOf(tagger, { streamName, type: event.type, data: event.data ?? null }) };
        return {
          id: event.id === undefined ? newEventId() : validateEventId(event.id),
          contentType: 'application/json',
          type: event.type,
          data: (event.data ?? null) as JSONType,
          metadata: encodeMetadata(event.metadata, event.recordedAt, tags) as JSONType,
        };
      });
      const streamId = names.qualify(streamName);
      return run(async () => {
        if (proposed.length === 0) {
          // ESDB would accept an empty append; the check is done here, on the stream's last event.
          const last = await streams.one(streamId, END);
          const version = last === undefined ? 0n : last.revision + 1n;
          if (!satisfiesExpected(expected, version)) throw new ExpectedVersionConflictError(streamName, expected, version);
          await keys.beforeAppend(keyChanges);
          await keys.afterAppend(keyChanges);
          if (last === undefined) return { nextVersion: 0n, lastPosition: 0n };
          return { nextVersion: version, lastPosition: toGlobalPosition(commitOf(last), await origin.require()) };
        }
        await keys.beforeAppend(keyChanges);
        let revision: bigint;
        try {
          revision = (await client.appendToStream(streamId, proposed, { expectedRevision })).nextExpectedRevision;
        } catch (error) {
          if (error instanceof WrongExpectedVersionError) {
            throw new ExpectedVersionConflictError(streamName, expected, versionOfRevision(error.actualVersion));
          }
          throw error;
        }
        await keys.afterAppend(keyChanges);
        // The append's reply carries a position that is not the last event's for every server
        // version: the last event is read back for its exact position.
        const last = await streams.one(streamId, revision);
        if (last === undefined) throw new Error(`Appended to ${streamName}, but its event at revision ${revision} cannot be read`);
        const commit = commitOf(last);
        all.remember(commit);
        return { nextVersion: versionOfRevision(revision), lastPosition: toGlobalPosition(commit, await origin.require()) };
      });
    },

    async readAll(readOptions) {
      const limit = readAllLimit(readOptions);
      const maxBytes = readAllMaxBytes(readOptions);
      const after = validAfter(readOptions?.after ?? 0n);
      const filter = validFilter(readOptions?.filter);
      return run(async () => {
        const found: RecordedEvent[] = [];
        if (limit === 0 || filterMatchesNothing(filter, tagger)) return found;
        let bytes = 0;
        await scanMatching(after, filter, (recorded, commit) => {
          const size = eventBytes(recorded);
          if (found.length > 0 && bytes + size > maxBytes) return false;
          bytes += size;
          found.push(recorded);
          all.remember(commit);
          return found.length < limit;
        });
        return found;
      });
    },

    // EventStoreDB counts nothing for a reader: the events are read and counted (their bytes
    // are not kept), up to the limit.
    async countAll(countOptions) {
      const limit = countAllLimit(countOptions);
      const after = validAfter(countOptions.after ?? 0n);
      const filter = validFilter(countOptions.filter);
      return run(async () => {
        let count = 0;
        if (limit === 0 || filterMatchesNothing(filter, tagger)) return count;
        await scanMatching(after, filter, () => ++count < limit);
        return count;
      });
    },

    subscribe(subscribeOptions) {
      if (closed) throw unavailable();
      const after = validAfter(subscribeOptions.after);
      const filter = validFilter(subscribeOptions.filter);
      const subscription = createLiveSubscription(createLiveSource(context, after, filter), subscribeOptions, (stopped) => subscriptions.delete(stopped));
      subscriptions.add(subscription);
      return subscription;
    },

    headPosition() {
      return run(async () => {
        const last = await all.findLast((event) => isDataEvent(names, event.streamId, event.type), () => -1n);
        if (last === undefined) return 0n;
        all.remember(last);
        return toGlobalPosition(last, await origin.require());
      });
    },

    readCheckpoint(name) {
      return run(() => checkpoints.read(validCheckpointName(name)));
    },

    async storeCheckpoint(name, position) {
      validCheckpointName(name);
      if (typeof position !== 'bigint' || position < 0n) throw new RangeError(`Invalid checkpoint position ${String(position)}`);
      await run(() => checkpoints.store(name, position));
    },

    listCheckpoints() {
      return run(() => checkpoints.list());
    },

    async ping() {
      await run(() => all.ping());
    },

    keys: checkedVault(keys.keys, () => {
      if (closed) throw unavailable();
    }),

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

const validAfter = (after: bigint): bigint => {
  if (typeof after !== 'bigint' || after < 0n) throw new RangeError(`after must be a bigint >= 0n, got ${String(after)}`);
  return after;
};

const validCheckpointName = (name: string): string => {
  if (typeof name !== 'string' || name === '') throw new RangeError('A checkpoint name must be a non-empty string');
  return name;
};
