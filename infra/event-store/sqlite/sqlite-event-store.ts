import Database from 'better-sqlite3';
import {
  readAllLimit,
  categoryOf,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type AppendResult,
  type EventFilter,
  type EventStore,
  type ExpectedVersion,
  type RecordedEvent,
  newEventId,
} from '../port.ts';
import { createAsyncCatchUpSubscription, type AsyncCatchUpSubscription } from '../catch-up-subscription.ts';
import { openCommitSignal } from '../../sqlite/commit-signal.ts';
import { createGroupCommit } from '../../sqlite/group-commit.ts';
import { messageOf, openSqlite, type SqliteSynchronous } from '../../sqlite/open-sqlite.ts';
import { readAllSql, schemaSql, SCHEMA_VERSION, sql, type EventRow, type ReadAllShape } from './schema.ts';

export type { SqliteSynchronous };

export interface SqliteEventStoreOptions {
  /** Database file; its directory is created if missing. `:memory:` works for a single connection. */
  readonly path: string;
  /** `PRAGMA synchronous` (see docs/durability.md). Default 'full'. */
  readonly synchronous?: SqliteSynchronous;
  /** How often subscriptions look for commits made by other connections (other processes). Default 25. */
  readonly pollIntervalMs?: number;
  /** How long a write waits for another connection's write lock before failing. Default 5000. */
  readonly busyTimeoutMs?: number;
}

const readAllStatementCacheSize = 64;

/**
 * The event store on one SQLite file (WAL mode), shareable by several processes (server, CLI).
 *
 * - An append is one savepoint (version check, inserts, stream version update) in a group commit
 *   (`infra/sqlite/group-commit.ts`): the appends of one turn of the event loop share one
 *   `BEGIN IMMEDIATE` transaction, and wait for another connection's write lock without
 *   stopping the thread.
 * - Appending no events checks the expected version and returns the stream as it is
 *   (`lastPosition` is the position of the stream's last event, 0n for an empty stream).
 * - Subscriptions are woken right after a commit of this thread (setImmediate) or of another
 *   thread of this process (a commit signal), and poll every `pollIntervalMs` for commits of
 *   other processes. The poll timer is unref'd: it does not keep
 *   the process alive by itself.
 * - SQLite failures (write lock still taken after `busyTimeoutMs`, I/O, disk full, read-only, use after close) reject
 *   with EventStoreUnavailableError. A duplicate event id rejects with a plain Error.
 * - `data` and `metadata` are stored as JSON text: `undefined` data reads back as `null`.
 */
export function createSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  const pollIntervalMs = options.pollIntervalMs ?? 25;
  if (!Number.isSafeInteger(pollIntervalMs) || pollIntervalMs < 1) {
    throw new RangeError(`pollIntervalMs must be a positive integer, got ${pollIntervalMs}`);
  }
  const db = openDatabase(options);

  const selectStreamVersion = db.prepare<[string], bigint>(sql.streamVersion).pluck();
  const upsertStream = db.prepare<[string, bigint]>(sql.upsertStream);
  const insertEvent = db.prepare<[string, string, string, bigint, string, string, string, number]>(sql.insertEvent);
  const selectPositionOfVersion = db.prepare<[string, bigint], bigint>(sql.positionOfVersion).pluck();
  const selectStream = db.prepare<[string], EventRow>(sql.readStream);
  const selectHead = db.prepare<[], bigint>(sql.headPosition).pluck();
  const selectCheckpoint = db.prepare<[string], bigint>(sql.readCheckpoint).pluck();
  const upsertCheckpoint = db.prepare<[string, bigint]>(sql.storeCheckpoint);
  const readAllStatements = new Map<string, Database.Statement<unknown[], EventRow>>();

  const selectCheckpoints = db.prepare<[], { name: string; position: bigint }>(sql.listCheckpoints);
  type PendingEvent = readonly [id: string, type: string, data: string, metadata: string, recordedAt: number | undefined];
  const append = db.transaction(
    (streamName: string, expected: ExpectedVersion, events: readonly PendingEvent[]): AppendResult => {
      const current = selectStreamVersion.get(streamName) ?? 0n;
      if (!versionMatches(expected, current)) throw new ExpectedVersionConflictError(streamName, expected, current);
      if (events.length === 0) {
        const lastPosition = current === 0n ? 0n : (selectPositionOfVersion.get(streamName, current) ?? 0n);
        return { nextVersion: current, lastPosition };
      }
      const category = categoryOf(streamName);
      const recordedAt = Date.now();
      let version = current;
      let lastPosition = 0n;
      for (const [id, type, data, metadata, importedAt] of events) {
        version += 1n;
        const info = insertEvent.run(id, streamName, category, version, type, data, metadata, importedAt ?? recordedAt);
        lastPosition = BigInt(info.lastInsertRowid);
      }
      upsertStream.run(streamName, version);
      return { nextVersion: version, lastPosition };
    },
  );

  let closed = false;
  let closing: Promise<void> | undefined;
  const subscriptions = new Set<AsyncCatchUpSubscription>();
  let poller: NodeJS.Timeout | undefined;
  let wakeScheduled = false;
  const commitSignal = openCommitSignal(options.path, () => scheduleWake());

  /** Runs a synchronous database operation, mapping SQLite failures to EventStoreUnavailableError. */
  const guard = <T>(operation: () => T): T => {
    if (closed) throw new EventStoreUnavailableError('The SQLite event store is closed');
    try {
      return operation();
    } catch (error) {
      throw toStoreError(error);
    }
  };

  const readRows = (after: bigint, upTo: bigint | undefined, limit: number, filter: EventFilter | undefined) => {
    const shape: ReadAllShape = {
      categories: filter?.categories?.length,
      streams: filter?.streams?.length,
      types: filter?.types?.length,
      since: filter?.since !== undefined,
      until: filter?.until !== undefined,
      upTo: upTo !== undefined,
      limit,
    };
    const text = readAllSql(shape);
    let statement = readAllStatements.get(text);
    if (statement === undefined) {
      if (readAllStatements.size >= readAllStatementCacheSize) {
        readAllStatements.delete(readAllStatements.keys().next().value!);
      }
      statement = db.prepare<unknown[], EventRow>(text);
      readAllStatements.set(text, statement);
    }
    const parameters: unknown[] = [after];
    if (upTo !== undefined) parameters.push(upTo);
    parameters.push(...(filter?.categories ?? []), ...(filter?.streams ?? []), ...(filter?.types ?? []));
    if (filter?.since !== undefined) parameters.push(epochMs(filter.since, 'filter.since'));
    if (filter?.until !== undefined) parameters.push(epochMs(filter.until, 'filter.until'));
    return statement.all(...parameters).map(toRecordedEvent);
  };

  const wakeSubscriptions = (): void => {
    wakeScheduled = false;
    if (closed || subscriptions.size === 0) return;
    let head: bigint;
    try {
      head = selectHead.get() ?? 0n;
    } catch {
      return; // e.g. a transient busy: the next poll or commit retries
    }
    for (const subscription of subscriptions) subscription.wake(head);
  };

  const scheduleWake = (): void => {
    if (wakeScheduled || subscriptions.size === 0) return;
    wakeScheduled = true;
    setImmediate(wakeSubscriptions);
  };

  const unregister = (subscription: AsyncCatchUpSubscription): void => {
    subscriptions.delete(subscription);
    if (subscriptions.size === 0 && poller !== undefined) {
      clearInterval(poller);
      poller = undefined;
    }
  };

  /** Writes of the same turn of the event loop share one transaction (see group-commit.ts). */
  const groupCommit = createGroupCommit(db, {
    mapError: toStoreError,
    onCommitted: () => {
      scheduleWake();
      commitSignal.notify();
    },
  });

  /** Reads are synchronous: the head and the events up to it come from one state of the file. */
  const source = {
    committedHead: async () => guard(() => selectHead.get() ?? 0n),
    read: async (after: bigint, limit: number, filter: EventFilter | undefined) =>
      guard(() => {
        const head = selectHead.get() ?? 0n;
        return { head, events: head > after ? readRows(after, head, limit, filter) : [] };
      }),
  };

  return {
    kind: 'sqlite',

    async readStream(streamName) {
      const events = guard(() => selectStream.all(streamName)).map(toRecordedEvent);
      return { version: events.at(-1)?.streamVersion ?? 0n, events };
    },

    async appendToStream(streamName, events, appendOptions) {
      const expected = appendOptions?.expectedVersion ?? 'any';
      const pending = events.map(
        (event): PendingEvent => [
          event.id ?? newEventId(),
          event.type,
          JSON.stringify(event.data ?? null),
          JSON.stringify(event.metadata ?? {}),
          event.recordedAt === undefined ? undefined : epochMs(event.recordedAt, 'recordedAt'),
        ],
      );
      if (pending.length === 0) return guard(() => append.deferred(streamName, expected, pending));
      return groupCommit.enqueue(() => {
        try {
          return append(streamName, expected, pending);
        } catch (error) {
          throw duplicateIdError(error, streamName);
        }
      });
    },

    async readAll(readOptions) {
      const limit = readAllLimit(readOptions);
      return guard(() => readRows(readOptions?.after ?? 0n, undefined, limit, readOptions?.filter));
    },

    subscribe(subscribeOptions) {
      if (closed) throw new EventStoreUnavailableError('The SQLite event store is closed');
      const subscription = createAsyncCatchUpSubscription(source, subscribeOptions, unregister);
      subscriptions.add(subscription);
      poller ??= setInterval(wakeSubscriptions, pollIntervalMs).unref();
      return subscription;
    },

    async headPosition() {
      return guard(() => selectHead.get() ?? 0n);
    },

    async readCheckpoint(name) {
      return guard(() => selectCheckpoint.get(name));
    },

    async storeCheckpoint(name, position) {
      await groupCommit.enqueue(() => void upsertCheckpoint.run(name, position));
    },

    async listCheckpoints() {
      return new Map(guard(() => selectCheckpoints.all()).map((row) => [row.name, row.position]));
    },

    async ping() {
      guard(() => selectHead.get());
    },

    close() {
      closing ??= (async () => {
        closed = true;
        groupCommit.close(new EventStoreUnavailableError('The SQLite event store is closed'));
        commitSignal.close();
        await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
        if (poller !== undefined) clearInterval(poller);
        try {
          db.close();
        } catch (error) {
          throw toStoreError(error);
        }
      })();
      return closing;
    },
  };
}

const openDatabase = (options: SqliteEventStoreOptions): Database.Database => {
  try {
    return openSqlite({ ...options, schemaSql, schemaVersion: SCHEMA_VERSION });
  } catch (error) {
    if (error instanceof RangeError) throw error;
    throw new EventStoreUnavailableError(`Cannot open the SQLite event store at ${options.path}: ${messageOf(error)}`, { cause: error });
  }
};

const versionMatches = (expected: ExpectedVersion, current: bigint): boolean => {
  switch (expected) {
    case 'any':
      return true;
    case 'stream_exists':
      return current > 0n;
    case 'no_stream':
      return current === 0n;
    default:
      return current === expected;
  }
};

const toRecordedEvent = (row: EventRow): RecordedEvent => ({
  id: row.event_id,
  type: row.type,
  data: JSON.parse(row.data) as unknown,
  metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
  streamName: row.stream_name,
  streamVersion: row.stream_version,
  globalPosition: row.global_position,
  recordedAt: new Date(Number(row.recorded_at)),
});

const epochMs = (date: Date, name: string): number => {
  const ms = date.getTime();
  if (Number.isNaN(ms)) throw new RangeError(`${name} is an invalid Date`);
  return ms;
};


/** SQLite failures become EventStoreUnavailableError; constraint violations and our own errors pass. */
const toStoreError = (error: unknown): unknown => {
  if (!(error instanceof Database.SqliteError) || error.code.startsWith('SQLITE_CONSTRAINT')) return error;
  return new EventStoreUnavailableError(`SQLite event store failure (${error.code}): ${error.message}`, { cause: error });
};

const duplicateIdError = (error: unknown, streamName: string): unknown =>
  error instanceof Database.SqliteError && error.code === 'SQLITE_CONSTRAINT_UNIQUE' && error.message.includes('event_id')
    ? new Error(`Appending to ${streamName}: an event with the same id already exists`, { cause: error })
    : error;
