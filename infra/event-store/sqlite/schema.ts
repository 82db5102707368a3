/**
 * SQL of the SQLite event store: schema and the fixed statements. Filtered reads of the whole log
 * are composed by `readAllSql`, `tagPositionsSql` and `countSql` because their shape depends on the filter.
 */

/**
 * Bumped (with a migration) whenever the schema below changes. Stored in `PRAGMA user_version`.
 * Every statement is idempotent, so the same text migrates any older version: 1 → 2 adds the tag
 * index, the store's metadata and the data keys; 2 → 3 drops the index on recorded_at; 3 → 4
 * drops the table of stream versions and the index on type (below).
 */
export const SCHEMA_VERSION = 4;

export const schemaSql = `
  -- No AUTOINCREMENT: events are never deleted, so the largest position plus one (SQLite's rowid)
  -- never reuses a committed one, without the sqlite_sequence row AUTOINCREMENT writes on every
  -- append. (A file made before keeps its AUTOINCREMENT: it is part of the table.)
  CREATE TABLE IF NOT EXISTS events (
    global_position INTEGER PRIMARY KEY,
    event_id        TEXT    NOT NULL UNIQUE,
    stream_name     TEXT    NOT NULL,
    category        TEXT    NOT NULL,
    stream_version  INTEGER NOT NULL,
    type            TEXT    NOT NULL,
    data            TEXT    NOT NULL,
    metadata        TEXT    NOT NULL,
    recorded_at     INTEGER NOT NULL,
    UNIQUE (stream_name, stream_version)
  );
  CREATE INDEX IF NOT EXISTS events_category_position ON events (category, global_position);
  -- No index on recorded_at nor on type: each cost a B-tree write on every append, for the time
  -- and type filters of \`relay events\` alone, which scan in position order instead (subscribers
  -- filter by category, whose index narrows a type filter too).
  DROP INDEX IF EXISTS events_recorded_at;
  DROP INDEX IF EXISTS events_type_position;

  -- A stream's version is its last event's, found in the unique index on (stream_name,
  -- stream_version) as fast as in a table of its own: that table cost a B-tree write on every
  -- append (every send batch and every message's outcomes are streams of their own).
  DROP TABLE IF EXISTS streams;

  CREATE TABLE IF NOT EXISTS checkpoints (
    name     TEXT    PRIMARY KEY,
    position INTEGER NOT NULL
  ) WITHOUT ROWID;

  -- Tags of events (EventTagger), beside the history: one range of the primary key per tag.
  CREATE TABLE IF NOT EXISTS event_tags (
    tag             TEXT    NOT NULL,
    global_position INTEGER NOT NULL,
    PRIMARY KEY (tag, global_position)
  ) WITHOUT ROWID;

  -- What the store records about itself (the tagger version its tags were derived with).
  CREATE TABLE IF NOT EXISTS store_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
  ) WITHOUT ROWID;

  -- Data keys (crypto-shredding), by id. created_seq orders them by creation (epoch µs-scaled,
  -- strictly increasing per store instance: see data-keys.ts); the partial indexes hold only
  -- retired keys, so a new key is written to the table and two indexes.
  CREATE TABLE IF NOT EXISTS data_keys (
    id            TEXT    PRIMARY KEY,
    created_seq    INTEGER NOT NULL,
    scope         TEXT    NOT NULL,
    subject       TEXT    NOT NULL,
    wrapped       TEXT    NOT NULL,
    uses          INTEGER NOT NULL,
    uses_left     INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    scope_retired INTEGER NOT NULL DEFAULT 0
  ) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS data_keys_scope ON data_keys (scope);
  CREATE INDEX IF NOT EXISTS data_keys_expires_at ON data_keys (expires_at);
  CREATE INDEX IF NOT EXISTS data_keys_used ON data_keys (created_seq) WHERE uses_left <= 0;
  CREATE INDEX IF NOT EXISTS data_keys_scope_retired ON data_keys (created_seq) WHERE scope_retired = 1;

  PRAGMA user_version = ${SCHEMA_VERSION};
`;

const eventColumns =
  'global_position, event_id, stream_name, stream_version, type, data, metadata, recorded_at';

export const sql = {
  streamVersion: 'SELECT stream_version FROM events WHERE stream_name = ? ORDER BY stream_version DESC LIMIT 1',
  insertEvent: `INSERT INTO events
                  (event_id, stream_name, category, stream_version, type, data, metadata, recorded_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  positionOfVersion: 'SELECT global_position FROM events WHERE stream_name = ? AND stream_version = ?',
  readStream: `SELECT ${eventColumns} FROM events WHERE stream_name = ? ORDER BY stream_version`,
  headPosition: 'SELECT coalesce(max(global_position), 0) FROM events',
  readCheckpoint: 'SELECT position FROM checkpoints WHERE name = ?',
  listCheckpoints: 'SELECT name, position FROM checkpoints ORDER BY name',
  storeCheckpoint: `INSERT INTO checkpoints (name, position) VALUES (?, ?)
                    ON CONFLICT (name) DO UPDATE SET position = excluded.position`,
  insertTag: 'INSERT OR IGNORE INTO event_tags (tag, global_position) VALUES (?, ?)',
  eventAt: `SELECT ${eventColumns} FROM events WHERE global_position = ?`,
  readMeta: 'SELECT value FROM store_meta WHERE key = ?',
  writeMeta: `INSERT INTO store_meta (key, value) VALUES (?, ?)
              ON CONFLICT (key) DO UPDATE SET value = excluded.value`,
  deleteMeta: 'DELETE FROM store_meta WHERE key = ?',
  /** Events to derive tags of, in chunks: no more than the chunk's rows in memory. */
  retagChunk: 'SELECT global_position, stream_name, type, data FROM events WHERE global_position > ? ORDER BY global_position LIMIT ?',
  deleteAllTags: 'DELETE FROM event_tags',
} as const;

const keyColumns = 'id, scope, subject, wrapped, uses, uses_left, expires_at, scope_retired';
const dueColumns = 'id, created_seq, scope, subject, expires_at, uses_left, scope_retired';

export const keySql = {
  insert: `INSERT INTO data_keys (${keyColumns}, created_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  importOne: `INSERT INTO data_keys (${keyColumns}, created_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  release: 'UPDATE data_keys SET uses_left = max(uses_left - ?, 0) WHERE id = ? AND uses_left > 0',
  retireScope: 'UPDATE data_keys SET scope_retired = 1 WHERE scope = ? AND scope_retired = 0',
  exists: 'SELECT 1 FROM data_keys WHERE id = ?',
  /** A key that may still seal: not used up, expired or retired. */
  sealable: 'SELECT 1 FROM data_keys WHERE id = ? AND uses_left > 0 AND expires_at > ? AND scope_retired = 0',
  destroy: 'DELETE FROM data_keys WHERE id = ?',
  usable: 'SELECT wrapped FROM data_keys WHERE id = ? AND expires_at > ? AND scope_retired = 0',
  /** The three ways to be due, each the oldest first from its own index: `due` merges them. */
  dueScope: `SELECT ${dueColumns} FROM data_keys WHERE scope_retired = 1 ORDER BY created_seq, id LIMIT ?`,
  dueExpired: `SELECT ${dueColumns} FROM data_keys WHERE expires_at <= ? ORDER BY created_seq, id LIMIT ?`,
  dueUsed: `SELECT ${dueColumns} FROM data_keys WHERE uses_left <= 0 ORDER BY created_seq, id LIMIT ?`,
  list: `SELECT ${keyColumns} FROM data_keys WHERE id > ? ORDER BY id LIMIT ?`,
} as const;

/** One row of `data_keys`, as read with safe integers. */
export interface KeyRow {
  id: string;
  created_seq?: bigint;
  scope: string;
  subject: string;
  wrapped: string;
  uses: bigint;
  uses_left: bigint;
  expires_at: bigint;
  scope_retired: bigint;
}

/** The columns of one row of `events`, as read with safe integers. */
export interface EventRow {
  global_position: bigint;
  event_id: string;
  stream_name: string;
  stream_version: bigint;
  type: string;
  data: string;
  metadata: string;
  recorded_at: bigint;
}

/** Which parts of a filter are present, and how many values each list has: one SQL shape each. */
export interface ReadAllShape {
  readonly categories: number | undefined;
  readonly streams: number | undefined;
  readonly types: number | undefined;
  readonly since: boolean;
  readonly until: boolean;
  /** Whether an inclusive upper bound on global_position is given (subscriptions read up to a head). */
  readonly upTo: boolean;
  /** Inlined, not bound: a bound LIMIT made this read several times slower (33 µs vs 9 µs). */
  readonly limit: number;
}

/** The criteria other than tags, on `events` aliased `e` (parameters in readAllSql's order, after upTo). */
const criteria = (shape: ReadAllShape, alias: string): string[] =>
  [
    inList(`${alias}category`, shape.categories),
    inList(`${alias}stream_name`, shape.streams),
    inList(`${alias}type`, shape.types),
    shape.since ? `${alias}recorded_at >= ?` : undefined,
    shape.until ? `${alias}recorded_at < ?` : undefined,
  ].filter((clause): clause is string => clause !== undefined);

const inList = (column: string, count: number | undefined): string | undefined => {
  if (count === undefined) return undefined;
  if (count === 0) return '0'; // an empty list matches nothing
  return `${column} IN (${Array.from({ length: count }, () => '?').join(', ')})`;
};

/** The shape's limit, inlined into the SQL: a non-negative safe integer, or a RangeError. */
const limitOf = (shape: ReadAllShape): number => {
  if (!Number.isSafeInteger(shape.limit) || shape.limit < 0) throw new RangeError(`Invalid limit ${shape.limit}`);
  return shape.limit;
};

/**
 * `SELECT ... WHERE global_position > ? [AND ...] ORDER BY global_position LIMIT n`. Parameters
 * follow the order of the clauses: after, upTo, categories, streams, types, since, until.
 * Every criterion is sargable, so SQLite can pick the (category|type, global_position) index, the
 * stream unique index or the primary key, whichever is most selective (time bounds are checked on
 * the rows read in position order).
 *
 * `byPosition`: read in position order along the primary key whatever the criteria (`NOT INDEXED`:
 * no index but the rowid's), so that each row of the range is looked at once and none is sorted.
 * For a range whose events mostly match (a subscriber behind a backlog of its own categories), the
 * cheapest read; it needs `upTo`, or it would walk the whole log to a sparse filter's last match.
 */
export const readAllSql = (shape: ReadAllShape, byPosition = false): string => {
  if (byPosition && !shape.upTo) throw new Error('A read by position needs an upper bound');
  const where = ['global_position > ?', ...(shape.upTo ? ['global_position <= ?'] : []), ...criteria(shape, '')];
  return `SELECT ${eventColumns} FROM events${byPosition ? ' NOT INDEXED' : ''} WHERE ${where.join(' AND ')} ORDER BY global_position LIMIT ${limitOf(shape)}`;
};

/**
 * The positions of one category's events after ? (and up to ?), matching the other criteria (the
 * shape's categories left out), in order, at most `limit`: a range of the (category, position)
 * index. Parameters: category, after, [upTo], then as readAllSql without the categories.
 */
export const categoryPositionsSql = (shape: ReadAllShape): string => {
  const where = ['category = ?', 'global_position > ?', ...(shape.upTo ? ['global_position <= ?'] : []), ...criteria({ ...shape, categories: undefined }, '')];
  return `SELECT global_position FROM events INDEXED BY events_category_position WHERE ${where.join(' AND ')} ORDER BY global_position LIMIT ${limitOf(shape)}`;
};

/**
 * How many events match (after ?, and the criteria), counted up to the shape's limit. Without an
 * ORDER BY, SQLite walks the most selective index and stops at the limit: for a filter by
 * categories, the (category, position) index alone, no event read. `tags`: how many tags a filter
 * by tags names (an event with several of them counts once). Parameters: the tags, after, then as
 * readAllSql (no upTo: one statement sees one state of the log).
 */
export const countSql = (shape: ReadAllShape, tags: number | undefined): string => {
  if (tags === undefined) {
    const where = ['global_position > ?', ...criteria(shape, '')];
    const index = shape.categories !== undefined && shape.categories > 0 ? ' INDEXED BY events_category_position' : '';
    return `SELECT count(*) FROM (SELECT 1 FROM events${index} WHERE ${where.join(' AND ')} LIMIT ${limitOf(shape)})`;
  }
  const others = criteria(shape, 'e.');
  const where = [inList('t.tag', tags)!, 't.global_position > ?', ...others];
  const join = others.length > 0 ? ' JOIN events e ON e.global_position = t.global_position' : '';
  return `SELECT count(*) FROM (SELECT DISTINCT t.global_position FROM event_tags t${join} WHERE ${where.join(' AND ')} LIMIT ${limitOf(shape)})`;
};

/**
 * The positions of one tag's events after ? (and up to ?), matching the other criteria, in order,
 * at most `limit`: a range of event_tags' primary key, each entry checked against its event only
 * when there are other criteria. Parameters: tag, after, [upTo], then as readAllSql.
 */
export const tagPositionsSql = (shape: ReadAllShape): string => {
  const others = criteria(shape, 'e.');
  const where = ['t.tag = ?', 't.global_position > ?', ...(shape.upTo ? ['t.global_position <= ?'] : []), ...others];
  const join = others.length > 0 ? ' JOIN events e ON e.global_position = t.global_position' : '';
  return `SELECT t.global_position FROM event_tags t${join} WHERE ${where.join(' AND ')} ORDER BY t.global_position LIMIT ${limitOf(shape)}`;
};
