/** The embedded log's tables: records per topic with dense offsets, ids for de-duplication, group offsets. */
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
`;

export const sql = {
  ensureTopic: 'INSERT INTO topics (name) VALUES (?) ON CONFLICT DO NOTHING',
  nextOffset: 'SELECT next_offset FROM topics WHERE name = ?',
  advanceTopic: 'UPDATE topics SET next_offset = ? WHERE name = ?',
  rememberId: 'INSERT INTO record_ids (topic, record_id, at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING',
  insertRecord: `INSERT INTO records (topic, offset, key, value, headers, record_id, due_at, timestamp)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
  readFrom: 'SELECT * FROM records WHERE topic = ? AND offset >= ? ORDER BY offset LIMIT ?',
  firstOffset: 'SELECT min(offset) FROM records WHERE topic = ?',
  popDue: 'SELECT * FROM records WHERE topic = ? AND (due_at IS NULL OR due_at <= ?) ORDER BY offset LIMIT ?',
  hasDue: 'SELECT 1 FROM records WHERE topic = ? AND (due_at IS NULL OR due_at <= ?) LIMIT 1',
  deleteRecord: 'DELETE FROM records WHERE topic = ? AND offset = ?',
  groupOffset: 'SELECT next_offset FROM group_offsets WHERE group_id = ? AND topic = ?',
  commit: `INSERT INTO group_offsets (group_id, topic, next_offset) VALUES (?, ?, ?)
           ON CONFLICT (group_id, topic) DO UPDATE SET next_offset = max(next_offset, excluded.next_offset)`,
  count: 'SELECT count(*) FROM records WHERE topic = ?',
  countFrom: 'SELECT count(*) FROM records WHERE topic = ? AND offset >= ?',
  topicFloors: 'SELECT topic, min(next_offset) AS floor FROM group_offsets GROUP BY topic',
  prune: 'DELETE FROM records WHERE topic = ? AND offset < ? AND timestamp < ?',
  pruneIds: 'DELETE FROM record_ids WHERE at < ?',
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
