/**
 * SQL of the PostgreSQL event store. Every statement is built for one schema (quoted identifier),
 * so that several stores (tests, tenants) can live in one database.
 *
 * Advisory locks used (the two-int form and the bigint form are separate lock spaces):
 * - (MIGRATION_LOCK_CLASS, hashtext(schema)), transaction level: serialises migrations.
 * - (POSITION_LOCK_CLASS, hashtext(schema)), session level, held only around the INSERT of an
 *   append: see `appendFunctionSql` for why.
 * - bigint (hashtext(schema) << 32 | hashtext(stream)), transaction level: serialises appends to
 *   one stream (a hash collision only serialises two unrelated streams).
 */

export const MIGRATION_LOCK_CLASS = 724_001;
export const POSITION_LOCK_CLASS = 724_002;

const identifier = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/** Validates and double-quotes a schema name (letters, digits, underscores; at most 63 chars). */
export const quoteSchema = (schema: string): string => {
  if (!identifier.test(schema)) throw new RangeError(`Invalid PostgreSQL schema name ${JSON.stringify(schema)}`);
  return `"${schema}"`;
};

const literal = (text: string): string => `'${text.replaceAll("'", "''")}'`;

/** Idempotent DDL; run inside a transaction holding the migration lock. */
export const schemaSql = (schema: string): string => {
  const s = quoteSchema(schema);
  return `
  CREATE SCHEMA IF NOT EXISTS ${s};

  CREATE TABLE IF NOT EXISTS ${s}.events (
    global_position BIGINT      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    transaction_id  xid8        NOT NULL DEFAULT pg_current_xact_id(),
    event_id        TEXT        NOT NULL UNIQUE,
    stream_name     TEXT        NOT NULL,
    category        TEXT        NOT NULL,
    stream_version  BIGINT      NOT NULL,
    type            TEXT        NOT NULL,
    data            JSONB       NOT NULL,
    metadata        JSONB       NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL DEFAULT date_trunc('milliseconds', now()),
    CONSTRAINT events_stream_version_key UNIQUE (stream_name, stream_version)
  );
  CREATE INDEX IF NOT EXISTS events_category_position ON ${s}.events (category, global_position);
  CREATE INDEX IF NOT EXISTS events_type_position ON ${s}.events (type, global_position);
  CREATE INDEX IF NOT EXISTS events_recorded_at ON ${s}.events (recorded_at);

  CREATE TABLE IF NOT EXISTS ${s}.streams (
    stream_name TEXT   PRIMARY KEY,
    version     BIGINT NOT NULL
  );

  CREATE TABLE IF NOT EXISTS ${s}.checkpoints (
    name     TEXT   PRIMARY KEY,
    position BIGINT NOT NULL
  );

  ${appendFunctionSql(schema)}
`;
};

/**
 * `append_events(stream, category, expected, events jsonb)`: the whole append in one round trip
 * (and one implicit transaction when called outside BEGIN). `expected`: -1 any, -2 stream_exists,
 * otherwise the exact version (0 = no stream). Returns (ok, version, last_position): on a version
 * mismatch ok is false, version is the actual version and nothing is written.
 *
 * THE GAP PROBLEM. Identity values are taken before commit, so a transaction can commit position
 * 7 while position 6 is still in flight; a reader following positions would skip 6. Readers
 * therefore only see events whose transaction_id < pg_snapshot_xmin(pg_current_snapshot()): every
 * transaction below xmin has ended, so that set of events is final. That alone is NOT enough for
 * position-ordered reading: transaction A may get its xid before B but its positions after B's,
 * then A commits while B is still open, and A's event is "below xmin" while B's lower position
 * is not yet visible. So the append makes xid order and position order agree: the transaction
 * id is assigned and the positions are drawn inside one critical section (the session-level
 * POSITION lock, held only for the INSERT, not until commit, so commits still run in parallel).
 * Hence for appends A, B: xid(A) < xid(B) implies every position of A < every position of B, and
 * when the event at position P has xid < xmin, every lower position belongs to a transaction
 * below xmin too: it is visible (committed) or gone (rolled back). Nothing below P can appear
 * later. Writers that bypass this function must follow the same protocol (lock, assign the xid,
 * insert, unlock, before any other write in their transaction).
 *
 * The stream lock is taken first, and the stream version read after it in a statement of its own
 * (READ COMMITTED: a fresh snapshot that sees the previous holder's commit). The transaction has
 * written nothing before the POSITION lock, so its xid is assigned inside it.
 */
export const appendFunctionSql = (schema: string): string => {
  const s = quoteSchema(schema);
  const schemaHash = `hashtext(${literal(schema)})`;
  return `
  CREATE OR REPLACE FUNCTION ${s}.append_events(p_stream text, p_category text, p_expected bigint, p_events jsonb)
  RETURNS TABLE (ok boolean, version bigint, last_position bigint)
  LANGUAGE plpgsql VOLATILE AS $fn$
  #variable_conflict use_column
  DECLARE
    v_current bigint;
    v_count bigint := jsonb_array_length(p_events);
    v_last bigint;
  BEGIN
    PERFORM pg_advisory_xact_lock((${schemaHash}::bigint << 32) | (hashtext(p_stream)::bigint & 4294967295));
    SELECT st.version INTO v_current FROM ${s}.streams st WHERE st.stream_name = p_stream;
    v_current := coalesce(v_current, 0);
    IF NOT (p_expected = -1 OR (p_expected = -2 AND v_current > 0) OR p_expected = v_current) THEN
      RETURN QUERY SELECT false, v_current, 0::bigint;
      RETURN;
    END IF;
    IF v_count = 0 THEN
      SELECT e.global_position INTO v_last FROM ${s}.events e
       WHERE e.stream_name = p_stream AND e.stream_version = v_current;
      RETURN QUERY SELECT true, v_current, coalesce(v_last, 0);
      RETURN;
    END IF;
    PERFORM pg_advisory_lock(${POSITION_LOCK_CLASS}, ${schemaHash});
    BEGIN
      PERFORM pg_current_xact_id();
      WITH inserted AS (
        INSERT INTO ${s}.events (event_id, stream_name, category, stream_version, type, data, metadata, recorded_at)
        SELECT x.value->>'id', p_stream, p_category, v_current + x.ordinality, x.value->>'type',
               x.value->'data', x.value->'metadata',
               coalesce((x.value->>'recordedAt')::timestamptz, date_trunc('milliseconds', now()))
          FROM jsonb_array_elements(p_events) WITH ORDINALITY AS x
         ORDER BY x.ordinality
        RETURNING global_position
      )
      SELECT max(inserted.global_position) INTO v_last FROM inserted;
    EXCEPTION WHEN OTHERS OR query_canceled THEN
      PERFORM pg_advisory_unlock(${POSITION_LOCK_CLASS}, ${schemaHash});
      RAISE;
    END;
    PERFORM pg_advisory_unlock(${POSITION_LOCK_CLASS}, ${schemaHash});
    INSERT INTO ${s}.streams AS st (stream_name, version) VALUES (p_stream, v_current + v_count)
      ON CONFLICT (stream_name) DO UPDATE SET version = excluded.version;
    RETURN QUERY SELECT true, v_current + v_count, v_last;
  END
  $fn$;
`;
};

const eventColumns = 'e.global_position, e.event_id, e.stream_name, e.stream_version, e.type, e.data, e.metadata, e.recorded_at';

/** One row of `events` as node-postgres returns it (BIGINT as string, JSONB parsed). */
export interface EventRow {
  global_position: string;
  event_id: string;
  stream_name: string;
  stream_version: string;
  type: string;
  data: unknown;
  metadata: Record<string, unknown>;
  recorded_at: Date;
}

/** The highest position of a transaction below the snapshot's xmin: the gap-free ("safe") head. */
const safeHeadSql = (s: string) =>
  `coalesce((SELECT max(h.global_position) FROM ${s}.events h
              WHERE h.transaction_id < pg_snapshot_xmin(pg_current_snapshot())), 0)`;

export const statements = (schema: string) => {
  const s = quoteSchema(schema);
  return {
    append: `SELECT ok, version, last_position FROM ${s}.append_events($1, $2, $3, $4::jsonb)`,
    streamVersion: `SELECT version FROM ${s}.streams WHERE stream_name = $1`,
    readStream: `SELECT ${eventColumns} FROM ${s}.events e WHERE e.stream_name = $1 ORDER BY e.stream_version`,
    safeHead: `SELECT ${safeHeadSql(s)} AS head`,
    committedHead: `SELECT coalesce(max(global_position), 0) AS head FROM ${s}.events`,
    readCheckpoint: `SELECT position FROM ${s}.checkpoints WHERE name = $1`,
    listCheckpoints: `SELECT name, position FROM ${s}.checkpoints ORDER BY name`,
    storeCheckpoint: `INSERT INTO ${s}.checkpoints (name, position) VALUES ($1, $2)
                      ON CONFLICT (name) DO UPDATE SET position = excluded.position`,
  } as const;
};

export type ListShape = 'none' | 'one' | 'many';

/** Which optional filter criteria a read has. */
export interface ReadAllShape {
  /** 'one' is bound as a scalar, so the (category|type, global_position) indexes give the order. */
  readonly categories: ListShape;
  readonly streams: ListShape;
  readonly types: ListShape;
  readonly since: boolean;
  readonly until: boolean;
}

/**
 * The safe head and up to $2 matching events after $1 and at or below it, in one statement (one
 * snapshot): `head` is how far the log has been scanned when fewer than $2 events come back.
 * Parameters: after, limit, then categories, streams, types (text, or text[] for 'many'), since,
 * until, as present.
 * Returns one row with null event columns when nothing matches.
 */
export const readAllSql = (schema: string, shape: ReadAllShape): string => {
  const s = quoteSchema(schema);
  let index = 2;
  const next = () => `$${++index}`;
  const list = (column: string, shape: ListShape) =>
    shape === 'none' ? undefined : shape === 'one' ? `${column} = ${next()}` : `${column} = ANY(${next()}::text[])`;
  const where = [
    'e.global_position > $1',
    // Implies global_position <= head (head is the max position below xmin). Not written as a
    // range on global_position: the planner cannot estimate it and then sorts the whole tail.
    'e.transaction_id < b.xmin',
    list('e.category', shape.categories),
    list('e.stream_name', shape.streams),
    list('e.type', shape.types),
    shape.since ? `e.recorded_at >= ${next()}` : undefined,
    shape.until ? `e.recorded_at < ${next()}` : undefined,
  ].filter((clause): clause is string => clause !== undefined);
  return `
    WITH b AS MATERIALIZED (
      SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin, ${safeHeadSql(s)} AS head
    )
    SELECT b.head AS safe_head, r.*
      FROM b LEFT JOIN LATERAL (
        SELECT ${eventColumns} FROM ${s}.events e
         WHERE ${where.join(' AND ')}
         ORDER BY e.global_position
         LIMIT $2
      ) r ON true
     ORDER BY r.global_position`;
};
