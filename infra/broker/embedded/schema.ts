/**
 * The embedded broker's tables (one SQLite file, WAL):
 *
 * - `topics`: every topic ever published to or ensured, with the offset its next record gets.
 *   Offsets are never reused, even when the records before were popped, pruned or deleted with
 *   their topic (`deleteTopics` keeps this row).
 * - `records`: the log, one row per record, keyed by (topic, offset). A pop deletes the row, and so
 *   does the retention (retention.ts) and `deleteTopics`.
 * - `record_ids`: the ids published per topic, for de-duplication; pruned after the id window.
 * - `group_offsets`: per (group, topic) the offset of the next record to hand to the group. A
 *   group gets its row when one of its members first claims the topic.
 * - `group_leases`: which member of a group (owner = `<pid>:<uuid>`) consumes a topic, until when.
 *
 * A `broker.db` written by earlier versions of Relay (the same tables without `group_leases`)
 * opens unchanged.
 */
export const SCHEMA_VERSION = 1;

export const schemaSql = `
CREATE TABLE IF NOT EXISTS topics (
  name TEXT PRIMARY KEY,
  next_offset INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS records (
  topic TEXT NOT NULL,
  offset INTEGER NOT NULL,
  key TEXT,
  value TEXT NOT NULL,
  headers TEXT NOT NULL,
  record_id TEXT,
  due_at INTEGER,
  timestamp INTEGER NOT NULL,
  PRIMARY KEY (topic, offset)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS record_ids (
  topic TEXT NOT NULL,
  record_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  PRIMARY KEY (topic, record_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS record_ids_at ON record_ids (at);
CREATE TABLE IF NOT EXISTS group_offsets (
  group_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  next_offset INTEGER NOT NULL,
  PRIMARY KEY (group_id, topic)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS group_leases (
  group_id TEXT NOT NULL,
  topic TEXT NOT NULL,
  owner TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (group_id, topic)
) WITHOUT ROWID;
PRAGMA user_version = ${SCHEMA_VERSION};
`;

const recordColumns = 'topic, offset, key, value, headers, record_id, due_at, timestamp';

export const sql = {
  ensureTopic: 'INSERT INTO topics (name) VALUES (?) ON CONFLICT DO NOTHING',
  topicNextOffset: 'SELECT next_offset FROM topics WHERE name = ?',
  setTopicNextOffset: 'UPDATE topics SET next_offset = ? WHERE name = ?',
  rememberId: 'INSERT INTO record_ids (topic, record_id, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  insertRecord: `INSERT INTO records (${recordColumns}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  readFrom: `SELECT ${recordColumns} FROM records WHERE topic = ? AND offset >= ? ORDER BY offset LIMIT ?`,
  hasDue: 'SELECT 1 FROM records WHERE topic = ? AND (due_at IS NULL OR due_at <= ?) LIMIT 1',
  /** When the first record of a topic with nothing due now falls due (NULL: it holds none). */
  nextDue: 'SELECT min(due_at) FROM records WHERE topic = ?',
  /** The due records a pop with `accept` offers, leaving out those other pops of this process offer (`reserved`, a JSON array). */
  readDue: `SELECT ${recordColumns} FROM records
            WHERE topic = @topic AND (due_at IS NULL OR due_at <= @now) AND offset NOT IN (SELECT value FROM json_each(@reserved))
            ORDER BY offset LIMIT @max`,
  popDue: `DELETE FROM records WHERE topic = @topic AND offset IN (
             SELECT offset FROM records
             WHERE topic = @topic AND (due_at IS NULL OR due_at <= @now) AND offset NOT IN (SELECT value FROM json_each(@reserved))
             ORDER BY offset LIMIT @max)
           RETURNING ${recordColumns}`,
  /** Deletes the given offsets (a JSON array) that are still there, and says which. */
  popOffsets: 'DELETE FROM records WHERE topic = @topic AND offset IN (SELECT value FROM json_each(@offsets)) RETURNING offset',
  /** Where a new group starts: the earliest retained record, else the next one to come. */
  earliestOffset: `SELECT coalesce((SELECT min(offset) FROM records WHERE topic = @topic),
                                   (SELECT next_offset FROM topics WHERE name = @topic), 0)`,
  groupOffset: 'SELECT next_offset FROM group_offsets WHERE group_id = ? AND topic = ?',
  initGroupOffset: 'INSERT INTO group_offsets (group_id, topic, next_offset) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  commit: `INSERT INTO group_offsets (group_id, topic, next_offset) VALUES (?, ?, ?)
           ON CONFLICT (group_id, topic) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)`,
  countAll: 'SELECT count(*) FROM records WHERE topic = ?',
  lease: 'SELECT owner, expires_at FROM group_leases WHERE group_id = ? AND topic = ?',
  takeLease: `INSERT INTO group_leases (group_id, topic, owner, expires_at) VALUES (?, ?, ?, ?)
              ON CONFLICT (group_id, topic) DO UPDATE SET owner = excluded.owner, expires_at = excluded.expires_at`,
  renewLeases: 'UPDATE group_leases SET expires_at = ? WHERE group_id = ? AND owner = ?',
  releaseLeases: 'DELETE FROM group_leases WHERE group_id = ? AND owner = ?',
  /** Per consumed topic, the lowest offset some group still has to consume. */
  topicFloors: 'SELECT topic, min(next_offset) AS floor FROM group_offsets GROUP BY topic',
  topicNames: 'SELECT name FROM topics',
  head: 'SELECT offset, timestamp FROM records WHERE topic = ? ORDER BY offset LIMIT 1',
  /**
   * Deletes, among the first `chunk` records of a topic, those every group committed past
   * (`offset < floor`, -1 when no group consumes the topic) stored before `consumedCutoff`, and
   * those stored before `expiredCutoff` (-1 when the topic keeps its records).
   */
  pruneRecords: `DELETE FROM records WHERE topic = @topic AND offset IN (
                   SELECT offset FROM records WHERE topic = @topic ORDER BY offset LIMIT @chunk)
                 AND ((offset < @floor AND timestamp < @consumedCutoff) OR timestamp < @expiredCutoff)`,
  pruneIds: `DELETE FROM record_ids WHERE (topic, record_id) IN (
               SELECT topic, record_id FROM record_ids WHERE at < @cutoff LIMIT @chunk)`,
  deleteGroupOffsets: 'DELETE FROM group_offsets WHERE topic = ?',
  deleteGroupLeases: 'DELETE FROM group_leases WHERE topic = ?',
  /** Records of a deleted topic: those published before the deletion began (`offset < @below`). */
  deleteRecordsChunk: `DELETE FROM records WHERE topic = @topic AND offset IN (
                         SELECT offset FROM records WHERE topic = @topic AND offset < @below ORDER BY offset LIMIT @chunk)`,
  /** Remembered ids of a deleted topic: those published before the deletion began (`at <= @before`). */
  deleteIdsChunk: `DELETE FROM record_ids WHERE topic = @topic AND record_id IN (
                     SELECT record_id FROM record_ids WHERE topic = @topic AND at <= @before LIMIT @chunk)`,
  ping: 'SELECT count(*) FROM topics WHERE name = ?',
} as const;

export interface RecordRow {
  topic: string;
  offset: bigint;
  key: string | null;
  value: string;
  headers: string;
  record_id: string | null;
  due_at: bigint | null;
  timestamp: bigint;
}

export interface LeaseRow {
  owner: string;
  expires_at: bigint;
}

export interface HeadRow {
  offset: bigint;
  timestamp: bigint;
}
