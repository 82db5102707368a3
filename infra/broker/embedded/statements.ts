import type Database from 'better-sqlite3';
import type { ConsumedRecord } from '../port.ts';
import { sql, type LeaseRow, type RecordRow } from './schema.ts';

/** The embedded broker's statements, prepared once on its connection (schema.ts holds their SQL). */
export const prepareStatements = (db: Database.Database) => {
  const prepare = <R = unknown>(text: string) => db.prepare<unknown[], R>(text);
  return {
    ensureTopic: prepare(sql.ensureTopic),
    topicNextOffset: prepare<bigint>(sql.topicNextOffset).pluck(),
    setTopicNextOffset: prepare(sql.setTopicNextOffset),
    rememberId: prepare(sql.rememberId),
    insertRecord: prepare(sql.insertRecord),
    readFrom: prepare<RecordRow>(sql.readFrom),
    hasDue: prepare(sql.hasDue).pluck(),
    nextDue: prepare<bigint | null>(sql.nextDue).pluck(),
    readDue: prepare<RecordRow>(sql.readDue),
    popDue: prepare<RecordRow>(sql.popDue),
    popOffsets: prepare<bigint>(sql.popOffsets).pluck(),
    earliestOffset: prepare<bigint>(sql.earliestOffset).pluck(),
    groupOffset: prepare<bigint>(sql.groupOffset).pluck(),
    initGroupOffset: prepare(sql.initGroupOffset),
    commit: prepare(sql.commit),
    countAll: prepare<bigint>(sql.countAll).pluck(),
    lease: prepare<LeaseRow>(sql.lease),
    takeLease: prepare(sql.takeLease),
    renewLeases: prepare(sql.renewLeases),
    releaseLeases: prepare(sql.releaseLeases),
    ping: prepare(sql.ping).pluck(),
    dataVersion: prepare<bigint>('PRAGMA data_version').pluck(),
  };
};

export type Statements = ReturnType<typeof prepareStatements>;

/** A stored row as the record consumers and pops hand out (one partition: 0). */
export const toRecord = (row: RecordRow): ConsumedRecord => ({
  topic: row.topic,
  partition: 0,
  offset: row.offset,
  key: row.key ?? undefined,
  value: row.value,
  headers: row.headers === '{}' ? {} : (JSON.parse(row.headers) as Record<string, string>),
  id: row.record_id ?? undefined,
  dueAt: row.due_at === null ? undefined : Number(row.due_at),
  timestamp: Number(row.timestamp),
});
