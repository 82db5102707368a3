import Database from 'better-sqlite3';
import {
  countAllLimit,
  readAllLimit,
  readAllMaxBytes,
  categoryOf,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type AppendResult,
  type EventFilter,
  type EventStore,
  type EventTagger,
  type ExpectedVersion,
  newEventId,
} from '../port.ts';
import { checkedVault, checkKeyChanges, type CheckedKeyChanges } from '../data-keys.ts';
import { createSubscriptionRegistry } from '../subscription-registry.ts';
import { tagsOf, validTagger } from '../tags.ts';
import { epochMs, filterMatchesNothing, positiveMs, validFilter, versionMatches } from '../validation.ts';
import { openCommitSignal } from '../../sqlite/commit-signal.ts';
import { watchCommits } from '../../sqlite/commit-watch.ts';
import { createGroupCommit } from '../../sqlite/group-commit.ts';
import { messageOf, openSqlite, type SqliteSynchronous } from '../../sqlite/open-sqlite.ts';
import { createWalTruncation } from '../../sqlite/wal-truncation.ts';
import { createSqliteDataKeys } from './data-keys.ts';
import { createEventReader, toRecordedEvent } from './read-events.ts';
import { bringTagsToVersion } from './retag.ts';
import { schemaSql, SCHEMA_VERSION, sql, type EventRow } from './schema.ts';

export type { SqliteSynchronous };

export interface SqliteEventStoreOptions {
  /** Database file; its directory is created if missing. `:memory:` works for a single connection. */
  readonly path: string;
  /** `PRAGMA synchronous` (see docs/durability.md). Default 'full'. */
  readonly synchronous?: SqliteSynchronous;
  /** How often subscriptions look for commits made by other connections (other processes). Default 25. */
  readonly pollIntervalMs?: number;
  /**
   * With this, the store watches its `-wal` file and polls every `pollIntervalMs` only for a
   * while after the file changed, and every `idlePollIntervalMs` otherwise
   * (`infra/sqlite/commit-watch.ts`); where the file cannot be watched it polls as without it.
   */
  readonly idlePollIntervalMs?: number;
  /**
   * Polls for the other threads of this process too: a poll that finds commits this store did not
   * know of (another process's) tells the other threads' stores on the file, as their commit
   * signals do, so that they can poll seldom. Default false.
   */
  readonly announcePolledCommits?: boolean;
  /** How long a write waits for another connection's write lock before failing. Default 5000. */
  readonly busyTimeoutMs?: number;
  /** WAL frames after which a commit of this connection checkpoints (see open-sqlite.ts). Default 1000. */
  readonly autoCheckpointPages?: number;
  /** Derives the tags of appended events (EventFilter.tags). Without one, no tags are written. */
  readonly tagger?: EventTagger;
  /**
   * After a data key is destroyed, the `-wal` file (which still holds copies of the key's page) is
   * truncated by a checkpoint tried at most this often until it succeeds (docs/durability.md). Default 1000.
   */
  readonly walTruncateIntervalMs?: number;
  /** Told the outcome of each attempt to truncate the WAL after a destroy (for logs and tests). */
  readonly onWalTruncation?: (truncated: boolean) => void;
}

/**
 * The event store on one SQLite file (WAL mode), shareable by several processes (server, CLI).
 *
 * - An append is one savepoint (version check, inserts, tags, key changes)
 *   in a group commit (`infra/sqlite/group-commit.ts`): the appends of one turn of the event loop
 *   share one `BEGIN IMMEDIATE` transaction, and wait for another connection's write lock without
 *   stopping the thread.
 * - Appending no events checks the expected version and returns the stream as it is
 *   (`lastPosition` is the position of the stream's last event, 0n for an empty stream); with key
 *   changes it applies them (a write), else it only reads.
 * - Subscriptions are woken right after a commit of this thread or of another thread of this
 *   process (a commit signal) that appended events of a category they read (setImmediate), and
 *   poll every `pollIntervalMs` for commits of other processes (`subscription-registry.ts`), or,
 *   with `idlePollIntervalMs`, that often only while the `-wal` file changes (commit-watch.ts).
 * - Tags live in `event_tags` beside the events; opening with a tagger of another version derives
 *   them again first (`retag.ts`). Data keys live in `data_keys`, deleted under `secure_delete`,
 *   then the WAL is truncated (`data-keys.ts`, `infra/sqlite/wal-truncation.ts`).
 * - SQLite failures (write lock still taken after `busyTimeoutMs`, I/O, disk full, read-only, use after close) reject
 *   with EventStoreUnavailableError. A duplicate event id rejects with a plain Error.
 * - `data` and `metadata` are stored as JSON text: `undefined` data reads back as `null`.
 */
export function createSqliteEventStore(options: SqliteEventStoreOptions): EventStore {
  const pollIntervalMs = positiveMs(options.pollIntervalMs ?? 25, 'pollIntervalMs');
  const walTruncateIntervalMs = positiveMs(options.walTruncateIntervalMs ?? 1000, 'walTruncateIntervalMs');
  const tagger = validTagger(options.tagger);
  const db = openDatabase(options, tagger);

  const selectStreamVersion = db.prepare<[string], bigint>(sql.streamVersion).pluck();
  const insertEvent = db.prepare<[string, string, string, bigint, string, string, string, number]>(sql.insertEvent);
  const insertTag = db.prepare<[string, bigint]>(sql.insertTag);
  const selectPositionOfVersion = db.prepare<[string, bigint], bigint>(sql.positionOfVersion).pluck();
  const selectStream = db.prepare<[string], EventRow>(sql.readStream);
  const selectHead = db.prepare<[], bigint>(sql.headPosition).pluck();
  const selectCheckpoint = db.prepare<[string], bigint>(sql.readCheckpoint).pluck();
  const upsertCheckpoint = db.prepare<[string, bigint]>(sql.storeCheckpoint);
  const selectCheckpoints = db.prepare<[], { name: string; position: bigint }>(sql.listCheckpoints);
  const reader = createEventReader(db);

  let closed = false;
  let closing: Promise<void> | undefined;

  /** Runs a synchronous database operation, mapping SQLite failures to EventStoreUnavailableError. */
  const guard = <T>(operation: () => T): T => {
    if (closed) throw new EventStoreUnavailableError('The SQLite event store is closed');
    try {
      return operation();
    } catch (error) {
      throw toStoreError(error);
    }
  };

  const readPage = (after: bigint, upTo: bigint | undefined, limit: number, maxBytes: number, filter: EventFilter | undefined) => {
    if (filterMatchesNothing(filter, tagger)) return { events: [], cut: false };
    return reader.read(after, upTo, limit, maxBytes, filter);
  };

  /** The highest head a wake of this store has read: a poll that reads a higher one found new commits. */
  let knownHead = -1n;
  /** Reads are synchronous: the head and the events up to it come from one state of the file. */
  const idlePollIntervalMs = options.idlePollIntervalMs === undefined ? undefined : positiveMs(options.idlePollIntervalMs, 'idlePollIntervalMs');
  const registry = createSubscriptionRegistry({
    pollIntervalMs,
    poller: (poll) => watchCommits({ file: options.path, busyMs: pollIntervalMs, idleMs: idlePollIntervalMs, look: poll }),
    head: () => guard(() => selectHead.get() ?? 0n),
    onHead: (head, polled) => {
      if (head <= knownHead) return;
      // Commits of this thread or of another thread of this process are told by their own signal
      // (one that has not arrived yet is told twice: a wake that finds nothing costs one read).
      if (polled && knownHead >= 0n && options.announcePolledCommits === true) commitSignal.notify();
      knownHead = head;
    },
    source: {
      committedHead: async () => guard(() => selectHead.get() ?? 0n),
      read: async (after, limit, maxBytes, filter) =>
        guard(() => {
          const head = selectHead.get() ?? 0n;
          if (head <= after) return { events: [], scanned: after, more: false };
          const { events, cut } = readPage(after, head, limit, maxBytes, filter);
          return cut ? { events, scanned: events.at(-1)?.globalPosition ?? after, more: true } : { events, scanned: head, more: false };
        }),
    },
  });
  // Another thread's commit wakes only the subscriptions that read what it appended, and a group
  // of this thread's writes that waits for the lock that commit held.
  const commitSignal = openCommitSignal(options.path, (categories) => {
    if (categories === undefined) registry.wakeSoon();
    else for (const category of categories) registry.wakeSoon(category);
    groupCommit.lockReleased();
  });

  /** Categories of the events appended in the transaction being committed: whom a commit wakes. */
  const appendedCategories = new Set<string>();
  /** Writes of the same turn of the event loop share one transaction (see group-commit.ts). */
  const groupCommit = createGroupCommit(db, {
    mapError: toStoreError,
    onCommitted: () => {
      for (const category of appendedCategories) registry.wakeSoon(category);
      // Said after every commit: one of checkpoints or key changes alone wakes no reader (an empty
      // list), but frees the write lock another thread may wait for.
      commitSignal.notify([...appendedCategories]);
      appendedCategories.clear();
    },
  });
  const walTruncation = createWalTruncation(db, {
    intervalMs: walTruncateIntervalMs,
    ...(options.onWalTruncation === undefined ? {} : { onAttempt: options.onWalTruncation }),
  });
  const keys = createSqliteDataKeys(db, { groupCommit, guard, onDestroyed: () => walTruncation.request() });

  type PendingEvent = readonly [id: string, type: string, data: string, metadata: string, recordedAt: number | undefined, tags: readonly string[]];
  const append = db.transaction(
    (streamName: string, expected: ExpectedVersion, events: readonly PendingEvent[], keyChanges: CheckedKeyChanges | undefined): AppendResult => {
      const current = selectStreamVersion.get(streamName) ?? 0n;
      if (!versionMatches(expected, current)) throw new ExpectedVersionConflictError(streamName, expected, current);
      if (keyChanges !== undefined) keys.check(keyChanges);
      let version = current;
      let lastPosition = 0n;
      if (events.length === 0) {
        lastPosition = current === 0n ? 0n : (selectPositionOfVersion.get(streamName, current) ?? 0n);
      } else {
        const category = categoryOf(streamName);
        appendedCategories.add(category);
        const recordedAt = Date.now();
        for (const [id, type, data, metadata, importedAt, tags] of events) {
          version += 1n;
          const info = insertEvent.run(id, streamName, category, version, type, data, metadata, importedAt ?? recordedAt);
          lastPosition = BigInt(info.lastInsertRowid);
          for (const tag of tags) insertTag.run(tag, lastPosition);
        }
      }
      if (keyChanges !== undefined) keys.apply(keyChanges);
      return { nextVersion: version, lastPosition };
    },
  );
  /** `append` in a group commit: a duplicate event id is told as such. */
  const appendOrExplain = (streamName: string, expected: ExpectedVersion, events: readonly PendingEvent[], keyChanges: CheckedKeyChanges | undefined): AppendResult => {
    try {
      return append(streamName, expected, events, keyChanges);
    } catch (error) {
      throw duplicateIdError(error, streamName);
    }
  };

  return {
    kind: 'sqlite',

    async readStream(streamName) {
      const events = guard(() => selectStream.all(streamName)).map(toRecordedEvent);
      return { version: events.at(-1)?.streamVersion ?? 0n, events };
    },

    async appendToStream(streamName, events, appendOptions) {
      const expected = appendOptions?.expectedVersion ?? 'any';
      const keyChanges = checkKeyChanges(appendOptions?.keys);
      // A loop, not an arrow made in each call (see writeEach in group-commit.ts).
      const pending: PendingEvent[] = [];
      for (const event of events) {
        pending.push([
          event.id ?? newEventId(),
          event.type,
          JSON.stringify(event.data ?? null),
          JSON.stringify(event.metadata ?? {}),
          event.recordedAt === undefined ? undefined : epochMs(event.recordedAt, 'recordedAt'),
          tagsOf(tagger, { streamName, type: event.type, data: event.data ?? null }),
        ]);
      }
      if (pending.length === 0 && keyChanges === undefined) return guard(() => append.deferred(streamName, expected, pending, undefined));
      // Bound, not an arrow made in each call (see writeEach in group-commit.ts).
      const result = await groupCommit.enqueue(appendOrExplain.bind(undefined, streamName, expected, pending, keyChanges));
      if (keyChanges !== undefined && keyChanges.destroy.length > 0) keys.onDestroyed();
      return result;
    },

    async readAll(readOptions) {
      const limit = readAllLimit(readOptions);
      const maxBytes = readAllMaxBytes(readOptions);
      const filter = validFilter(readOptions?.filter);
      const after = readOptions?.after ?? 0n;
      return guard(() => readPage(after, filter?.tags === undefined ? undefined : (selectHead.get() ?? 0n), limit, maxBytes, filter).events);
    },

    async countAll(countOptions) {
      const limit = countAllLimit(countOptions);
      const filter = validFilter(countOptions.filter);
      if (filterMatchesNothing(filter, tagger)) return 0;
      return guard(() => reader.count(countOptions.after ?? 0n, limit, filter));
    },

    subscribe(subscribeOptions) {
      if (closed) throw new EventStoreUnavailableError('The SQLite event store is closed');
      validFilter(subscribeOptions.filter);
      return registry.subscribe(subscribeOptions);
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

    keys: checkedVault(keys.vault, () => guard(() => undefined)),

    close() {
      closing ??= (async () => {
        closed = true;
        groupCommit.close(new EventStoreUnavailableError('The SQLite event store is closed'));
        commitSignal.close();
        await registry.stopAll();
        walTruncation.close();
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

const openDatabase = (options: SqliteEventStoreOptions, tagger: EventTagger | undefined): Database.Database => {
  let db: Database.Database | undefined;
  try {
    db = openSqlite({ ...options, schemaSql, schemaVersion: SCHEMA_VERSION });
    // Deleted rows (destroyed data keys) are overwritten with zeros in their pages, not just unlinked.
    db.pragma('secure_delete = ON');
    if (tagger !== undefined) bringTagsToVersion(db, tagger);
    return db;
  } catch (error) {
    db?.close();
    if (error instanceof RangeError) throw error;
    throw new EventStoreUnavailableError(`Cannot open the SQLite event store at ${options.path}: ${messageOf(error)}`, { cause: error });
  }
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
