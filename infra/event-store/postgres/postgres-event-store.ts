import pg from 'pg';
import {
  readAllLimit,
  categoryOf,
  EventStoreUnavailableError,
  ExpectedVersionConflictError,
  type EventFilter,
  type EventStore,
  type ExpectedVersion,
  type RecordedEvent,
  newEventId,
} from '../port.ts';
import { createAsyncCatchUpSubscription, type AsyncCatchUpSubscription } from '../catch-up-subscription.ts';
import { MIGRATION_LOCK_CLASS, readAllSql, schemaSql, statements, type EventRow, type ListShape, type ReadAllShape } from './schema.ts';

export interface PostgresEventStoreOptions {
  readonly connectionString: string;
  /** Schema holding the tables (created if missing). Default 'relay'. */
  readonly schema?: string;
  /** How often subscriptions look for new commits (of any process). Default 25. */
  readonly pollIntervalMs?: number;
  /** Maximum number of pooled connections. Default 10. */
  readonly poolSize?: number;
  /** How long to wait for a connection before failing with EventStoreUnavailableError. Default 5000. */
  readonly connectionTimeoutMs?: number;
}

/**
 * The event store on PostgreSQL (>= 13: xid8), shareable by any number of processes.
 *
 * - An append is one call of the `append_events` function (one round trip, one transaction):
 *   per-stream advisory lock, version check, inserts, stream version update. See schema.ts for
 *   how positions stay gap-free for readers (transaction ids below the snapshot's xmin).
 * - readAll and subscriptions only return events of transactions below the current snapshot's
 *   xmin, in position order: a position read from them is a safe checkpoint. The price: an
 *   event becomes readable only once every transaction (in the whole cluster) that started writing
 *   before it has ended; a long-running writing transaction delays delivery (never loses events).
 *   headPosition is that same safe head. readStream reads committed events directly.
 * - catchUp waits for everything committed before the call (the plain max position), so it also
 *   waits for older transactions still open.
 * - Subscriptions poll every `pollIntervalMs` (timer unref'd) and are woken after own appends.
 * - Connection failures, timeouts, server shutdown/cancel and resource errors reject with
 *   EventStoreUnavailableError. A duplicate event id rejects with a plain Error.
 * - The schema is migrated in the background at creation (under an advisory lock) and every
 *   method waits for it; a failed migration is retried by the next call.
 */
export function createPostgresEventStore(options: PostgresEventStoreOptions): EventStore {
  const pollIntervalMs = options.pollIntervalMs ?? 25;
  if (!Number.isSafeInteger(pollIntervalMs) || pollIntervalMs < 1) {
    throw new RangeError(`pollIntervalMs must be a positive integer, got ${pollIntervalMs}`);
  }
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
  const subscriptions = new Set<AsyncCatchUpSubscription>();
  let poller: NodeJS.Timeout | undefined;
  let polling = false;
  const readAllTexts = new Map<string, string>();

  let migration: Promise<void> | undefined;
  const ready = (): Promise<void> => {
    migration ??= migrate(pool, schema).catch((error: unknown) => {
      migration = undefined; // retried by the next call
      throw toStoreError(error);
    });
    return migration;
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
  const query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) =>
    run(() => pool.query<R>(text, values)).then((result) => result.rows);

  const readEvents = async (after: bigint, limit: number, filter: EventFilter | undefined) => {
    const shape: ReadAllShape = {
      categories: listShape(filter?.categories),
      streams: listShape(filter?.streams),
      types: listShape(filter?.types),
      since: filter?.since !== undefined,
      until: filter?.until !== undefined,
    };
    const key = JSON.stringify(shape);
    let text = readAllTexts.get(key);
    if (text === undefined) readAllTexts.set(key, (text = readAllSql(schema, shape)));
    const values: unknown[] = [String(after), limit];
    for (const list of [filter?.categories, filter?.streams, filter?.types]) {
      if (list !== undefined) values.push(list.length === 1 ? list[0] : [...list]);
    }
    if (filter?.since !== undefined) values.push(validDate(filter.since, 'since'));
    if (filter?.until !== undefined) values.push(validDate(filter.until, 'until'));
    const rows = await query<{ safe_head: string } & Partial<EventRow>>(text, values);
    return {
      head: BigInt(rows[0]?.safe_head ?? '0'),
      events: rows.filter((row): row is { safe_head: string } & EventRow => row.global_position != null).map(toRecordedEvent),
    };
  };

  const safeHead = async (): Promise<bigint> => BigInt((await query<{ head: string }>(sql.safeHead))[0]!.head);

  const wakeSubscriptions = async (): Promise<void> => {
    if (polling || closed || subscriptions.size === 0) return;
    polling = true;
    try {
      const head = await safeHead();
      for (const subscription of subscriptions) subscription.wake(head);
    } catch {
      // e.g. the server is briefly unreachable: the next poll retries
    } finally {
      polling = false;
    }
  };

  const unregister = (subscription: AsyncCatchUpSubscription): void => {
    subscriptions.delete(subscription);
    if (subscriptions.size === 0 && poller !== undefined) {
      clearInterval(poller);
      poller = undefined;
    }
  };

  const source = {
    committedHead: async () => BigInt((await query<{ head: string }>(sql.committedHead))[0]!.head),
    read: readEvents,
  };

  return {
    kind: 'postgres',

    async readStream(streamName) {
      const events = (await query<EventRow>(sql.readStream, [streamName])).map(toRecordedEvent);
      return { version: events.at(-1)?.streamVersion ?? 0n, events };
    },

    async appendToStream(streamName, events, appendOptions) {
      const expected = appendOptions?.expectedVersion ?? 'any';
      const payload = JSON.stringify(
        events.map((event) => ({
          id: event.id ?? newEventId(),
          type: event.type,
          data: event.data ?? null,
          metadata: event.metadata ?? {},
          ...(event.recordedAt === undefined ? {} : { recordedAt: isoTime(event.recordedAt) }),
        })),
      );
      let row: { ok: boolean; version: string; last_position: string };
      try {
        [row] = (await query<typeof row>(sql.append, [streamName, categoryOf(streamName), expectedCode(expected), payload])) as [
          typeof row,
        ];
      } catch (error) {
        if (isUniqueViolation(error, 'events_event_id_key')) {
          throw new Error(`Appending to ${streamName}: an event with the same id already exists`, { cause: error });
        }
        if (isUniqueViolation(error, 'events_stream_version_key')) {
          // Only a writer bypassing append_events can cause this: report it as the conflict it is.
          const [current] = await query<{ version: string }>(sql.streamVersion, [streamName]);
          throw new ExpectedVersionConflictError(streamName, expected, BigInt(current?.version ?? '0'));
        }
        throw error;
      }
      const version = BigInt(row.version);
      if (!row.ok) throw new ExpectedVersionConflictError(streamName, expected, version);
      if (events.length > 0 && subscriptions.size > 0) setImmediate(() => void wakeSubscriptions());
      return { nextVersion: version, lastPosition: BigInt(row.last_position) };
    },

    async readAll(readOptions) {
      const limit = readAllLimit(readOptions);
      return (await readEvents(readOptions?.after ?? 0n, limit, readOptions?.filter)).events;
    },

    subscribe(subscribeOptions) {
      if (closed) throw unavailable();
      const subscription = createAsyncCatchUpSubscription(source, subscribeOptions, unregister);
      subscriptions.add(subscription);
      poller ??= setInterval(() => void wakeSubscriptions(), pollIntervalMs).unref();
      return subscription;
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

    close() {
      closing ??= (async () => {
        closed = true;
        await Promise.all([...subscriptions].map((subscription) => subscription.stop()));
        if (poller !== undefined) clearInterval(poller);
        await migration?.catch(() => undefined);
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

const migrate = async (pool: pg.Pool, schema: string): Promise<void> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK_CLASS, schema]);
    await client.query(schemaSql(schema));
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};

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

const validDate = (date: Date, name: string): Date => {
  if (Number.isNaN(date.getTime())) throw new RangeError(`filter.${name} is an invalid Date`);
  return date;
};

const sqlStateOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
};

const isUniqueViolation = (error: unknown, constraint: string): boolean =>
  sqlStateOf(error) === '23505' && (error as { constraint?: unknown }).constraint === constraint;

/** SQLSTATE classes meaning "the store cannot serve now": connection, resources, shutdown/cancel, system. */
const unavailableClasses = new Set(['08', '53', '57', '58', 'XX', '40']);

/**
 * Connection-level failures (no SQLSTATE: refused, reset, terminated, connect timeout, pool
 * ended) and unavailable SQLSTATE classes become EventStoreUnavailableError; statement errors
 * (constraints, bad data) and our own errors pass unchanged.
 */
const toStoreError = (error: unknown): unknown => {
  if (error instanceof EventStoreUnavailableError || error instanceof ExpectedVersionConflictError) return error;
  if (error instanceof RangeError || error instanceof TypeError) return error;
  const state = sqlStateOf(error);
  if (state !== undefined && !unavailableClasses.has(state.slice(0, 2)) && state !== '55P03') return error;
  if (!(error instanceof Error)) return error;
  return new EventStoreUnavailableError(`PostgreSQL event store failure${state ? ` (${state})` : ''}: ${error.message}`, {
    cause: error,
  });
};

const isoTime = (date: Date): string => {
  if (Number.isNaN(date.getTime())) throw new RangeError('recordedAt is an invalid Date');
  return date.toISOString();
};
