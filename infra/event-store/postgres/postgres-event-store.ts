import pg from 'pg';
import {
  countAllLimit,
  readAllLimit,
  readAllMaxBytes,
  categoryOf,
  DataKeyGoneError,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type EventFilter,
  type EventStore,
  type EventTagger,
  type ExpectedVersion,
  type RecordedEvent,
  newEventId,
} from '../port.ts';
import { checkedVault, checkKeyChanges } from '../data-keys.ts';
import { createSubscriptionRegistry } from '../subscription-registry.ts';
import { tagsOf, validTagger } from '../tags.ts';
import { distinctTags, epochMs, filterMatchesNothing, positiveMs, validFilter } from '../validation.ts';
import { isUniqueViolation, keyGoneError, toStoreError } from './errors.ts';
import { createPostgresKeys, isDuplicateKey, keyChangesJson } from './key-vault.ts';
import { countSql, readAllSql, type ListShape, type ReadAllShape } from './read-sql.ts';
import { bringTagsToVersion } from './retag.ts';
import { appendChannel, listenForAppends } from './append-listener.ts';
import { appendNotifier } from './append-notifier.ts';
import { migrateUnderLock } from './migration.ts';
import { schemaSql, statements, type EventRow } from './schema.ts';

export { createPostgresKeyVault, type PostgresKeyVaultOptions } from './key-vault.ts';

export interface PostgresEventStoreOptions {
  readonly connectionString: string;
  /** Schema holding the tables (created if missing). Default 'relay'. */
  readonly schema?: string;
  /** How often subscriptions look for new commits (of any process) right after a notification of one, or while not listening. Default 25. */
  readonly pollIntervalMs?: number;
  /** Maximum number of pooled connections. Default 10. */
  readonly poolSize?: number;
  /** How long to wait for a connection before failing with EventStoreUnavailableError. Default 5000. */
  readonly connectionTimeoutMs?: number;
  /**
   * How long a query of the store's own operations (appends, reads, checkpoints, keys; not the
   * migrations, which wait for each other's locks) may go unanswered before it fails with
   * EventStoreUnavailableError and its connection is dropped. Without it, a query sent to a
   * server cut off from this process without a word (a network partition: no reset, no FIN) waits
   * as long as the cut, and the request behind it with it (issue 48). An append that timed out may
   * have been committed all the same: the caller cannot know. Default 10000.
   */
  readonly queryTimeoutMs?: number;
  /** Derives the tags of appended events (EventFilter.tags). Without one, no tags are written. */
  readonly tagger?: EventTagger;
}

/**
 * The event store on PostgreSQL (>= 13: xid8), shareable by any number of processes.
 *
 * - An append is one call of the `append_events` function (one round trip, one transaction):
 *   per-stream advisory lock, version check, inserts, tags, key changes, stream version update.
 *   See append-function.ts for how positions stay gap-free for readers (transaction ids below the
 *   snapshot's xmin).
 * - readAll and subscriptions only return events of transactions below the current snapshot's
 *   xmin, in position order: a position read from them is a safe checkpoint. The price: an
 *   event becomes readable only once every transaction (in the whole cluster) that started writing
 *   before it has ended; a long-running writing transaction delays delivery (never loses events).
 *   headPosition is that same safe head. readStream reads committed events directly.
 * - catchUp waits for everything committed before the call (the plain max position), so it also
 *   waits for older transactions still open.
 * - Subscriptions are woken after own appends, and by PostgreSQL's notification of any process's
 *   append, sent after its commit (append-notifier.ts; append-listener.ts: then every
 *   `pollIntervalMs` for a moment; about once a second when quiet; every `pollIntervalMs` while
 *   the listening connection is down).
 * - `data` and `metadata` are JSON columns (text as given, checked for syntax only): any JSON text
 *   JavaScript produces is kept, `\u0000` and unpaired surrogates included.
 * - Connection failures, timeouts, server shutdown/cancel and resource errors reject with
 *   EventStoreUnavailableError. A duplicate event id rejects with a plain Error.
 * - The schema is migrated, then the tags brought to the tagger's version (retag.ts), in the
 *   background at creation (under advisory locks), and every method waits for it; a failure is
 *   retried by the next call.
 */
export function createPostgresEventStore(options: PostgresEventStoreOptions): EventStore {
  const pollIntervalMs = positiveMs(options.pollIntervalMs ?? 25, 'pollIntervalMs');
  const tagger = validTagger(options.tagger);
  const schema = options.schema ?? 'relay';
  const sql = statements(schema); // validates the schema name
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize ?? 10,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
  });
  // An idle client losing its connection emits 'error' on the pool: without a listener that
  // would crash the process. The next query gets a fresh connection (or fails and is mapped).
  pool.on('error', () => undefined);

  let closed = false;
  let closing: Promise<void> | undefined;
  const sqlTexts = new Map<string, string>();

  let preparation: Promise<void> | undefined;
  const ready = (): Promise<void> => {
    preparation ??= (async () => {
      await migrateUnderLock(pool, schema, schemaSql(schema));
      if (tagger !== undefined) await bringTagsToVersion(pool, schema, tagger);
    })().catch((error: unknown) => {
      preparation = undefined; // retried by the next call
      throw toStoreError(error);
    });
    return preparation;
  };
  ready().catch(() => undefined); // start now; failures surface (and retry) on use

  const unavailable = () => new EventStoreUnavailableError('The PostgreSQL event store is closed');

  /** Runs queries once the schema is ready, mapping connection failures to EventStoreUnavailableError. */
  const run = async <T>(operation: () => Promise<T>): Promise<T> => {
    if (closed) throw unavailable();
    try {
      await ready();
      if (closed) throw unavailable();
      return await operation();
    } catch (error) {
      throw toStoreError(error);
    }
  };
  const queryTimeoutMs = positiveMs(options.queryTimeoutMs ?? 10_000, 'queryTimeoutMs');
  const query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
    // pg drops a connection whose query timed out (its pool releases it with the error).
    run(() => pool.query<R>({ text, values: values ?? [], query_timeout: queryTimeoutMs } as pg.QueryConfig)).then((result) => result.rows);

  type PageRow = { safe_head: string; fits: boolean | null } & Partial<EventRow>;

  /** The SQL of a read (or count) of the filter's shape, made once per shape. */
  const sqlFor = (kind: 'read' | 'count', shape: ReadAllShape): string => {
    const key = `${kind}:${JSON.stringify(shape)}`;
    let text = sqlTexts.get(key);
    if (text === undefined) sqlTexts.set(key, (text = kind === 'read' ? readAllSql(schema, shape) : countSql(schema, shape)));
    return text;
  };

  /** The shape of a filter and its parameters, in the order read-sql.ts numbers them. */
  const filterShape = (filter: EventFilter | undefined): { shape: ReadAllShape; values: unknown[] } => {
    const shape: ReadAllShape = {
      categories: listShape(filter?.categories),
      streams: listShape(filter?.streams),
      types: listShape(filter?.types),
      since: filter?.since !== undefined,
      until: filter?.until !== undefined,
      tags: filter?.tags !== undefined,
    };
    const values: unknown[] = [];
    for (const list of [filter?.categories, filter?.streams, filter?.types]) {
      if (list !== undefined) values.push(list.length === 1 ? list[0] : [...list]);
    }
    if (filter?.since !== undefined) values.push(new Date(epochMs(filter.since, 'filter.since')));
    if (filter?.until !== undefined) values.push(new Date(epochMs(filter.until, 'filter.until')));
    if (filter?.tags !== undefined) values.push(distinctTags(filter.tags));
    return { shape, values };
  };

  const readPage = async (after: bigint, limit: number, maxBytes: number, filter: EventFilter | undefined) => {
    const nothing = limit === 0 || filterMatchesNothing(filter, tagger);
    const { shape, values: criteria } = filterShape(filter);
    const text = sqlFor('read', shape);
    const values: unknown[] = [String(after), nothing ? 0 : limit, maxBytes, ...criteria];
    const rows = await query<PageRow>(text, values);
    const fitting = rows.filter((row): row is PageRow & EventRow => row.global_position != null && row.fits === true);
    const events = fitting.map(toRecordedEvent);
    const cut = fitting.length < rows.filter((row) => row.global_position != null).length || (!nothing && events.length === limit);
    return { head: BigInt(rows[0]?.safe_head ?? '0'), events, cut };
  };

  /** Where an event was committed; undefined when it was not, or when the store cannot say now. */
  const committedEvent = async (eventId: string) =>
    (await query<{ stream_version: string; global_position: string }>(sql.committedEvent, [eventId]).catch(() => []))[0];

  const safeHead = async (): Promise<bigint> => BigInt((await query<{ head: string }>(sql.safeHead))[0]!.head);

  const channel = appendChannel(schema);
  /** Other processes' subscriptions told of this one's appends (their listeners: append-listener.ts). */
  const notifier = appendNotifier(() => query('SELECT pg_notify($1, \'\')', [channel]), pollIntervalMs);

  const registry = createSubscriptionRegistry({
    pollIntervalMs,
    poller: (poll) => listenForAppends({ connectionString: options.connectionString, channel, pollIntervalMs }, poll),
    head: safeHead,
    source: {
      committedHead: async () => BigInt((await query<{ head: string }>(sql.committedHead))[0]!.head),
      read: async (after, limit, maxBytes, filter) => {
        const { head, events, cut } = await readPage(after, limit, maxBytes, filter);
        if (cut) return { events, scanned: events.at(-1)?.globalPosition ?? after, more: true };
        return { events, scanned: head > after ? head : after, more: false };
      },
    },
  });

  const keys = createPostgresKeys(query, schema);

  return {
    kind: 'postgres',

    async readStream(streamName) {
      const events = (await query<EventRow>(sql.readStream, [streamName])).map(toRecordedEvent);
      return { version: events.at(-1)?.streamVersion ?? 0n, events };
    },

    async appendToStream(streamName, events, appendOptions) {
      const expected = appendOptions?.expectedVersion ?? 'any';
      const keyChanges = checkKeyChanges(appendOptions?.keys);
      const ids: string[] = [];
      const types: string[] = [];
      const data: string[] = [];
      const metadata: string[] = [];
      const recordedAt: (string | null)[] = [];
      const tagIndex: number[] = [];
      const tags: string[] = [];
      events.forEach((event, i) => {
        ids.push(event.id ?? newEventId());
        types.push(event.type);
        data.push(JSON.stringify(event.data ?? null));
        metadata.push(JSON.stringify(event.metadata ?? {}));
        recordedAt.push(event.recordedAt === undefined ? null : isoTime(event.recordedAt));
        for (const tag of tagsOf(tagger, { streamName, type: event.type, data: event.data ?? null })) {
          tagIndex.push(i + 1);
          tags.push(tag);
        }
      });
      const values = [
        streamName,
        categoryOf(streamName),
        expectedCode(expected),
        ids,
        types,
        data,
        metadata,
        recordedAt,
        tagIndex,
        tags,
        keyChanges === undefined ? null : keyChangesJson(keyChanges),
      ];
      /** What a refused append is reported as. */
      const appendFailure = async (error: unknown): Promise<unknown> => {
        if (isUniqueViolation(error, 'events_event_id_key')) return new Error(`Appending to ${streamName}: an event with the same id already exists`, { cause: error });
        if (isDuplicateKey(error)) return new Error(`Appending to ${streamName}: a data key with the same id already exists`, { cause: error });
        const gone = keyGoneError(error);
        if (gone !== undefined) return gone;
        if (isUniqueViolation(error, 'events_stream_version_key')) {
          // Only a writer bypassing append_events can cause this: report it as the conflict it is.
          const [current] = await query<{ version: string }>(sql.streamVersion, [streamName]);
          return new ExpectedVersionConflictError(streamName, expected, BigInt(current?.version ?? '0'));
        }
        return error;
      };
      let row: { ok: boolean; version: string; last_position: string; gone: string[] | null };
      try {
        [row] = (await query<typeof row>(sql.append, values)) as [typeof row];
      } catch (error) {
        // No answer (a timeout, a lost connection) is no outcome: the append may have committed.
        // A process frozen past the query timeout (SIGSTOP, a paused VM) sees its timer fire
        // before it reads the answer that came meanwhile; reporting "not appended" then has a
        // client retry what was kept (the fault suite saw a send answered 503 and delivered). So
        // it asks: its last event in the store means the append committed, as a whole.
        const committed = error instanceof EventStoreUnavailableError && ids.length > 0 ? await committedEvent(ids[ids.length - 1]!) : undefined;
        if (!committed) throw await appendFailure(error);
        row = { ok: true, version: committed.stream_version, last_position: committed.global_position, gone: null };
      }
      const version = BigInt(row.version);
      if (row.gone != null) throw new DataKeyGoneError(row.gone);
      if (!row.ok) throw new ExpectedVersionConflictError(streamName, expected, version);
      if (events.length > 0) {
        registry.wakeSoon(categoryOf(streamName));
        notifier.appended();
      }
      return { nextVersion: version, lastPosition: BigInt(row.last_position) };
    },

    async readAll(readOptions) {
      const limit = readAllLimit(readOptions);
      const maxBytes = readAllMaxBytes(readOptions);
      const filter = validFilter(readOptions?.filter);
      return (await readPage(readOptions?.after ?? 0n, limit, maxBytes, filter)).events;
    },

    async countAll(countOptions) {
      const limit = countAllLimit(countOptions);
      const filter = validFilter(countOptions.filter);
      if (limit === 0 || filterMatchesNothing(filter, tagger)) return 0;
      const { shape, values } = filterShape(filter);
      const [row] = await query<{ n: string }>(sqlFor('count', shape), [String(countOptions.after ?? 0n), limit, ...values]);
      return Number(row!.n);
    },

    subscribe(subscribeOptions) {
      if (closed) throw unavailable();
      validFilter(subscribeOptions.filter);
      return registry.subscribe(subscribeOptions);
    },

    headPosition: safeHead,

    async readCheckpoint(name) {
      const [row] = await query<{ position: string }>(sql.readCheckpoint, [name]);
      return row === undefined ? undefined : BigInt(row.position);
    },

    async storeCheckpoint(name, position) {
      await query(sql.storeCheckpoint, [name, String(position)]);
    },

    async listCheckpoints() {
      const rows = await query<{ name: string; position: string }>(sql.listCheckpoints, []);
      return new Map(rows.map((row) => [row.name, BigInt(row.position)]));
    },

    async ping() {
      await run(() => pool.query('SELECT 1'));
    },

    keys: checkedVault(keys, () => {
      if (closed) throw unavailable();
    }),

    close() {
      closing ??= (async () => {
        // What is owed told, but a server that does not answer holds the close up for no more than a second.
        let bound: NodeJS.Timeout | undefined;
        await Promise.race([notifier.flush(), new Promise((resolve) => (bound = setTimeout(resolve, 1_000)))]);
        clearTimeout(bound);
        closed = true;
        await registry.stopAll();
        await preparation?.catch(() => undefined);
        try {
          await pool.end();
        } catch (error) {
          throw toStoreError(error);
        }
      })();
      return closing;
    },
  };
}

const expectedCode = (expected: ExpectedVersion): string => {
  switch (expected) {
    case 'any':
      return '-1';
    case 'stream_exists':
      return '-2';
    case 'no_stream':
      return '0';
    default:
      if (typeof expected !== 'bigint' || expected < 0n) throw new RangeError(`Invalid expected version ${String(expected)}`);
      return String(expected);
  }
};

const toRecordedEvent = (row: EventRow): RecordedEvent => ({
  id: row.event_id,
  type: row.type,
  data: row.data,
  metadata: row.metadata,
  streamName: row.stream_name,
  streamVersion: BigInt(row.stream_version),
  globalPosition: BigInt(row.global_position),
  recordedAt: row.recorded_at,
});

const listShape = (list: readonly string[] | undefined): ListShape =>
  list === undefined ? 'none' : list.length === 1 ? 'one' : 'many';

const isoTime = (date: Date): string => new Date(epochMs(date, 'recordedAt')).toISOString();
