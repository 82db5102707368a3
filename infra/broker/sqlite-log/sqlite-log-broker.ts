import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { BrokerUnavailableError, type Broker, type ConsumedRecord } from '../port.ts';
import { createLogConsumer, type LogConsumer } from './sqlite-log-consumer.ts';
import { schemaSql, sql, type RecordRow } from './schema.ts';

export interface SqliteLogBrokerOptions {
  readonly path: string;
  readonly synchronous?: 'off' | 'normal' | 'full' | 'extra';
  /** How often consumers look for records published by other processes. Default 25. */
  readonly pollIntervalMs?: number;
  /** Consumed records and remembered ids older than this are deleted. Default 7 days. */
  readonly retentionMs?: number;
  readonly busyTimeoutMs?: number;
}

const toRecord = (row: RecordRow): ConsumedRecord => ({
  topic: row.topic,
  partition: 0,
  offset: row.offset,
  key: row.key ?? undefined,
  value: row.value,
  headers: JSON.parse(row.headers) as Record<string, string>,
  id: row.record_id ?? undefined,
  dueAt: row.due_at === null ? undefined : Number(row.due_at),
  timestamp: Number(row.timestamp),
});

/**
 * The embedded broker: a durable log in one SQLite file (WAL). Topics have one partition and
 * dense offsets; a publish and a pop are each one transaction, so a record published is there
 * after a crash and a record popped is gone for every process sharing the file. Records carrying
 * an id are published once per topic, even after they were popped or consumed.
 */
export function createSqliteLogBroker(options: SqliteLogBrokerOptions): Broker {
  const retentionMs = options.retentionMs ?? 7 * 24 * 3_600_000;
  let db: Database.Database;
  try {
    fs.mkdirSync(path.dirname(path.resolve(options.path)), { recursive: true });
    db = new Database(options.path);
    db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
    db.pragma('journal_mode = WAL');
    db.pragma(`synchronous = ${options.synchronous ?? 'full'}`);
    db.defaultSafeIntegers(true);
    db.exec(schemaSql);
  } catch (error) {
    throw new BrokerUnavailableError(`Cannot open the embedded broker at ${options.path}`, { cause: error });
  }
  const s = Object.fromEntries(Object.entries(sql).map(([name, text]) => [name, db.prepare(text)])) as Record<keyof typeof sql, Database.Statement>;
  const scalar = (statement: Database.Statement, ...params: unknown[]) => statement.pluck().get(...params) as bigint | null | undefined;

  const publishTx = db.transaction((records: Parameters<Broker['publish']>[0]) => {
    const now = Date.now();
    const next = new Map<string, bigint>();
    for (const record of records) {
      if (record.id !== undefined && s.rememberId.run(record.topic, record.id, now).changes === 0) continue;
      let offset = next.get(record.topic);
      if (offset === undefined) {
        s.ensureTopic.run(record.topic);
        offset = scalar(s.nextOffset, record.topic) ?? 0n;
      }
      s.insertRecord.run(
        record.topic,
        offset,
        record.key ?? null,
        record.value,
        JSON.stringify(record.headers ?? {}),
        record.id ?? null,
        record.dueAt ?? null,
        now,
      );
      next.set(record.topic, offset + 1n);
    }
    for (const [topic, offset] of next) s.advanceTopic.run(offset, topic);
    return next.size;
  });

  const popTx = db.transaction((topic: string, max: number) => {
    const rows = s.popDue.all(topic, Date.now(), max) as RecordRow[];
    for (const row of rows) s.deleteRecord.run(topic, row.offset);
    return rows.map(toRecord);
  });

  const ensureTx = db.transaction((names: readonly string[]) => {
    for (const name of names) s.ensureTopic.run(name);
  });

  let closed = false;
  const consumers = new Set<LogConsumer>();
  const guard = <T>(operation: () => T): T => {
    if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
    try {
      return operation();
    } catch (error) {
      if (error instanceof BrokerUnavailableError) throw error;
      throw new BrokerUnavailableError(`Embedded broker failure: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  const wakeAll = () => {
    for (const consumer of consumers) consumer.wake();
  };
  const poller = setInterval(wakeAll, options.pollIntervalMs ?? 25);
  poller.unref();
  const pruner = setInterval(() => {
    try {
      const cutoff = Date.now() - retentionMs;
      for (const { topic, floor } of s.topicFloors.all() as Array<{ topic: string; floor: bigint }>) s.prune.run(topic, floor, cutoff);
      s.pruneIds.run(cutoff);
    } catch {
      // retried at the next tick
    }
  }, 60_000);
  pruner.unref();

  const source = {
    readFrom: (topic: string, offset: bigint, limit: number) => guard(() => (s.readFrom.all(topic, offset, limit) as RecordRow[]).map(toRecord)),
    startOffset: (groupId: string, topic: string) =>
      guard(() => scalar(s.groupOffset, groupId, topic) ?? scalar(s.firstOffset, topic) ?? 0n),
    commit: (groupId: string, topic: string, nextOffset: bigint) => guard(() => void s.commit.run(groupId, topic, nextOffset)),
  };

  return {
    kind: 'embedded',
    async ensureTopics(topics) {
      guard(() => ensureTx.immediate(topics));
    },
    async publish(records) {
      if (records.length === 0) return;
      guard(() => publishTx.immediate(records));
      setImmediate(wakeAll);
    },
    async consume(consumeOptions) {
      const consumer = guard(() => createLogConsumer(source, consumeOptions, (c) => consumers.delete(c)));
      consumers.add(consumer);
      consumer.wake();
      return consumer;
    },
    async pop(topic, max) {
      if (!Number.isSafeInteger(max) || max < 1) return [];
      // Most polls find nothing: a plain read says so without taking the write lock.
      if (guard(() => s.hasDue.get(topic, Date.now())) === undefined) return [];
      return guard(() => popTx.immediate(topic, max));
    },
    async depth(topic, groupId) {
      return guard(() => {
        if (groupId === undefined) return Number(scalar(s.count, topic) ?? 0n);
        return Number(scalar(s.countFrom, topic, source.startOffset(groupId, topic)) ?? 0n);
      });
    },
    async ping() {
      guard(() => s.count.get('ping'));
    },
    async close() {
      if (closed) return;
      clearInterval(poller);
      clearInterval(pruner);
      await Promise.all([...consumers].map((c) => c.stop()));
      closed = true;
      db.close();
    },
  };
}
