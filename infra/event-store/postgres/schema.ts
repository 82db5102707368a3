/**
 * Tables of the PostgreSQL event store, and their migration. Every statement is built for one
 * schema (quoted identifier), so that several stores (tests, tenants) can live in one database.
 *
 * Advisory locks used (the two-int form and the bigint form are separate lock spaces):
 * - (MIGRATION_LOCK_CLASS, hashtext(schema)), transaction level: serialises migrations.
 * - (POSITION_LOCK_CLASS, hashtext(schema)), session level, held only around the INSERT of an
 *   append: see append-function.ts for why.
 * - (TAG_LOCK_CLASS, hashtext(schema)), session level, held while tags are derived again
 *   (retag.ts): one process derives, the others wait for it and find the work done.
 * - bigint (hashtext(schema) << 32 | hashtext(stream)), transaction level: serialises appends to
 *   one stream (a hash collision only serialises two unrelated streams).
 */
import { appendFunctionSql, applyKeyChangesFunctionSql } from './append-function.ts';
import { literal, quoteSchema } from './identifiers.ts';

export { MIGRATION_LOCK_CLASS, POSITION_LOCK_CLASS, TAG_LOCK_CLASS, quoteSchema } from './identifiers.ts';

/**
 * The data keys: their counters and state in `data_keys`, their material in `data_key_material`,
 * written once and deleted once, and their releases in `data_key_releases` until folded into
 * `data_keys` (apply_key_changes). Folds update `data_keys`; each update leaves a dead copy of the
 * row until vacuumed, and those copies hold no key material. Both tables are vacuumed
 * as soon as they hold a dead row (scale factor and threshold 0, no cost delay): see
 * docs/durability.md for what remains of a destroyed key, where, and for how long.
 * Ids sort bytewise ("C"), as SQLite's do, so that `list` pages the same way on both.
 */
export const keysSchemaSql = (schema: string): string => {
  const s = quoteSchema(schema);
  const vacuumAtOnce = 'autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 0, autovacuum_vacuum_cost_delay = 0';
  return `
  CREATE SCHEMA IF NOT EXISTS ${s};

  CREATE TABLE IF NOT EXISTS ${s}.data_keys (
    id            TEXT COLLATE "C" PRIMARY KEY,
    created_seq   BIGINT      GENERATED ALWAYS AS IDENTITY,
    scope         TEXT        NOT NULL,
    subject       TEXT        NOT NULL,
    uses          INTEGER     NOT NULL,
    uses_left     INTEGER     NOT NULL,
    expires_at    TIMESTAMPTZ NOT NULL,
    scope_retired BOOLEAN     NOT NULL DEFAULT false
  ) WITH (${vacuumAtOnce});
  CREATE INDEX IF NOT EXISTS data_keys_scope ON ${s}.data_keys (scope);
  CREATE INDEX IF NOT EXISTS data_keys_expires_at ON ${s}.data_keys (expires_at);
  CREATE INDEX IF NOT EXISTS data_keys_used ON ${s}.data_keys (created_seq) WHERE uses_left <= 0;
  CREATE INDEX IF NOT EXISTS data_keys_scope_retired ON ${s}.data_keys (created_seq) WHERE scope_retired;

  CREATE TABLE IF NOT EXISTS ${s}.data_key_material (
    id      TEXT COLLATE "C" PRIMARY KEY,
    wrapped TEXT NOT NULL
  ) WITH (${vacuumAtOnce});

  -- Uses released and not yet folded into data_keys.uses_left (apply_key_changes: why).
  CREATE TABLE IF NOT EXISTS ${s}.data_key_releases (
    key_id TEXT COLLATE "C" NOT NULL REFERENCES ${s}.data_keys (id) ON DELETE CASCADE,
    uses   INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS data_key_releases_key ON ${s}.data_key_releases (key_id);

  ${applyKeyChangesFunctionSql(schema)}
`;
};

/**
 * Idempotent DDL of the whole store; run inside a transaction holding the migration lock.
 *
 * Migrations of schemas made by earlier versions: `data` and `metadata` were JSONB, which refuses
 * strings holding U+0000 or an unpaired surrogate (`\\ud800`) that JSON texts from JavaScript can
 * hold and SQLite keeps; they become JSON (text, checked only for syntax) with their rows (a rewrite
 * of the table, once). The append function of the old signature is dropped.
 */
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
    data            JSON        NOT NULL,
    metadata        JSON        NOT NULL,
    recorded_at     TIMESTAMPTZ NOT NULL DEFAULT date_trunc('milliseconds', now()),
    CONSTRAINT events_stream_version_key UNIQUE (stream_name, stream_version)
  );
  CREATE INDEX IF NOT EXISTS events_category_position ON ${s}.events (category, global_position);
  CREATE INDEX IF NOT EXISTS events_type_position ON ${s}.events (type, global_position);
  CREATE INDEX IF NOT EXISTS events_recorded_at ON ${s}.events (recorded_at);

  DO $migrate$
  BEGIN
    IF (SELECT a.atttypid FROM pg_attribute a
         WHERE a.attrelid = ${literal(`${s}.events`)}::regclass AND a.attname = 'data') = 'jsonb'::regtype THEN
      ALTER TABLE ${s}.events ALTER COLUMN data TYPE JSON USING data::json,
                              ALTER COLUMN metadata TYPE JSON USING metadata::json;
    END IF;
  END
  $migrate$;
  DROP FUNCTION IF EXISTS ${s}.append_events(text, text, bigint, jsonb);

  CREATE TABLE IF NOT EXISTS ${s}.streams (
    stream_name TEXT   PRIMARY KEY,
    version     BIGINT NOT NULL
  );

  CREATE TABLE IF NOT EXISTS ${s}.checkpoints (
    name     TEXT   PRIMARY KEY,
    position BIGINT NOT NULL
  );

  -- Tags of events (EventTagger), beside the history: one range of the primary key per tag.
  CREATE TABLE IF NOT EXISTS ${s}.event_tags (
    tag             TEXT COLLATE "C" NOT NULL,
    global_position BIGINT NOT NULL,
    PRIMARY KEY (tag, global_position)
  );

  -- What the store records about itself (the tagger version its tags were derived with).
  CREATE TABLE IF NOT EXISTS ${s}.store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  );

  ${keysSchemaSql(schema)}

  ${appendFunctionSql(schema)}
`;
};

const eventColumns = 'e.global_position, e.event_id, e.stream_name, e.stream_version, e.type, e.data, e.metadata, e.recorded_at';

/** One row of `events` as node-postgres returns it (BIGINT as string, JSON parsed). */
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
export const safeHeadSql = (s: string) =>
  `coalesce((SELECT max(h.global_position) FROM ${s}.events h
              WHERE h.transaction_id < pg_snapshot_xmin(pg_current_snapshot())), 0)`;

export const statements = (schema: string) => {
  const s = quoteSchema(schema);
  return {
    append: `SELECT ok, version, last_position, gone FROM ${s}.append_events($1, $2, $3, $4::text[], $5::text[], $6::json[], $7::json[], $8::timestamptz[], $9::int[], $10::text[], $11::json)`,
    streamVersion: `SELECT version FROM ${s}.streams WHERE stream_name = $1`,
    committedEvent: `SELECT stream_version, global_position FROM ${s}.events WHERE event_id = $1`,
    readStream: `SELECT ${eventColumns} FROM ${s}.events e WHERE e.stream_name = $1 ORDER BY e.stream_version`,
    safeHead: `SELECT ${safeHeadSql(s)} AS head`,
    committedHead: `SELECT coalesce(max(global_position), 0) AS head FROM ${s}.events`,
    readCheckpoint: `SELECT position FROM ${s}.checkpoints WHERE name = $1`,
    listCheckpoints: `SELECT name, position FROM ${s}.checkpoints ORDER BY name`,
    storeCheckpoint: `INSERT INTO ${s}.checkpoints (name, position) VALUES ($1, $2)
                      ON CONFLICT (name) DO UPDATE SET position = excluded.position`,
  } as const;
};

export { eventColumns };
