import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { BrokerUnavailableError, type Broker, type ConsumedRecord, type OutgoingRecord } from '../port.ts';
import { createEmbeddedConsumer, type Claim, type ConsumerSource, type EmbeddedConsumer } from './embedded-consumer.ts';
import { openCommitSignal } from '../../sqlite/commit-signal.ts';
import { createGroupCommit } from '../../sqlite/group-commit.ts';
import { messageOf, openSqlite, type SqliteSynchronous } from '../../sqlite/open-sqlite.ts';
import { schemaSql, SCHEMA_VERSION, sql, type LeaseRow, type RecordRow } from './schema.ts';

export type { SqliteSynchronous };

export interface EmbeddedBrokerOptions {
  /** Database file; its directory is created if missing. */
  readonly path: string;
  /** `PRAGMA synchronous` (see docs/durability.md). Default 'full'. */
  readonly synchronous?: SqliteSynchronous;
  /** How often consumers look for records published by other processes. Default 25. */
  readonly pollIntervalMs?: number;
  /** Consumed records and remembered ids older than this are deleted. Default 7 days. */
  readonly retentionMs?: number;
  /** How often the retention runs. Default 60000. */
  readonly retentionIntervalMs?: number;
  /** How long a member's claim on a topic outlives it if it hangs (a dead process loses it at once). Default 10000. */
  readonly groupLeaseMs?: number;
  /** How long a write waits for another connection's lock before failing. Default 5000. */
  readonly busyTimeoutMs?: number;
}

const PRUNE_CHUNK = 1000;

/**
 * The embedded broker: a durable log in one SQLite file (WAL), shareable by the processes of one
 * host. Topics have one partition (0) and dense offsets from 0.
 *
 * - Publishes and pops are group-committed (`infra/sqlite/group-commit.ts`): those of one turn of
 *   the event loop share a `BEGIN IMMEDIATE` transaction, each in its own savepoint, and wait for
 *   another connection's write lock without stopping the thread. A record carrying an id is
 *   published once per topic, even after it was popped or consumed (until its id is pruned with
 *   the retention). A pop deletes what it returns: a popped record is gone for every connection.
 * - Consumers are woken right after a publish of this thread (setImmediate) or of another thread
 *   of this process (a commit signal) and, when another process committed (`PRAGMA
 *   data_version`), within `pollIntervalMs`.
 * - Retention deletes records older than `retentionMs` that every group consuming their topic has
 *   committed past. Records of topics no group consumes (inbound, popped) are kept until popped.
 * - SQLite failures and use after close reject with BrokerUnavailableError.
 */
export function createEmbeddedBroker(options: EmbeddedBrokerOptions): Broker {
  const pollIntervalMs = positive(options.pollIntervalMs ?? 25, 'pollIntervalMs');
  const retentionMs = positive(options.retentionMs ?? 7 * 24 * 3_600_000, 'retentionMs');
  const retentionIntervalMs = positive(options.retentionIntervalMs ?? 60_000, 'retentionIntervalMs');
  const leaseMs = positive(options.groupLeaseMs ?? 10_000, 'groupLeaseMs');
  const db = openDatabase(options);
  const prepare = <R = unknown>(text: string) => db.prepare<unknown[], R>(text);
  const s = {
    ensureTopic: prepare(sql.ensureTopic),
    topicNextOffset: prepare<bigint>(sql.topicNextOffset).pluck(),
    setTopicNextOffset: prepare(sql.setTopicNextOffset),
    rememberId: prepare(sql.rememberId),
    insertRecord: prepare(sql.insertRecord),
    readFrom: prepare<RecordRow>(sql.readFrom),
    hasDue: prepare(sql.hasDue).pluck(),
    popDue: prepare<RecordRow>(sql.popDue),
    earliestOffset: prepare<bigint>(sql.earliestOffset).pluck(),
    groupOffset: prepare<bigint>(sql.groupOffset).pluck(),
    initGroupOffset: prepare(sql.initGroupOffset),
    commit: prepare(sql.commit),
    countAll: prepare<bigint>(sql.countAll).pluck(),
    countFrom: prepare<bigint>(sql.countFrom).pluck(),
    lease: prepare<LeaseRow>(sql.lease),
    takeLease: prepare(sql.takeLease),
    renewLeases: prepare(sql.renewLeases),
    releaseLeases: prepare(sql.releaseLeases),
    topicFloors: prepare<{ topic: string; floor: bigint }>(sql.topicFloors),
    pruneRecords: prepare(sql.pruneRecords),
    pruneIds: prepare(sql.pruneIds),
    ping: prepare(sql.ping).pluck(),
    dataVersion: prepare<bigint>('PRAGMA data_version').pluck(),
  };

  const publishTx = db.transaction((records: readonly OutgoingRecord[]) => {
    const now = Date.now();
    const next = new Map<string, bigint>();
    for (const record of records) {
      let offset = next.get(record.topic);
      if (offset === undefined) {
        s.ensureTopic.run(record.topic);
        offset = s.topicNextOffset.get(record.topic) ?? 0n;
        next.set(record.topic, offset);
      }
      if (record.id !== undefined && s.rememberId.run(record.topic, record.id, now).changes === 0) continue;
      const headers = record.headers === undefined ? '{}' : JSON.stringify(record.headers);
      s.insertRecord.run(record.topic, offset, record.key ?? null, record.value, headers, record.id ?? null, record.dueAt ?? null, now);
      next.set(record.topic, offset + 1n);
    }
    for (const [topic, offset] of next) s.setTopicNextOffset.run(offset, topic);
  });

  const popTx = db.transaction((topic: string, max: number): ConsumedRecord[] =>
    s.popDue
      .all({ topic, now: Date.now(), max })
      .sort((a, b) => (a.offset < b.offset ? -1 : 1))
      .map(toRecord),
  );

  const ensureTx = db.transaction((names: readonly string[]) => {
    for (const name of names) s.ensureTopic.run(name);
  });

  const claimTx = db.transaction((groupId: string, topic: string, owner: string, lease: number): Claim => {
    const now = Date.now();
    const current = s.lease.get(groupId, topic);
    if (current !== undefined && heldByOther(current, owner, now)) return { held: false, retryAt: Number(current.expires_at) };
    s.takeLease.run(groupId, topic, owner, now + lease);
    s.ensureTopic.run(topic);
    s.initGroupOffset.run(groupId, topic, s.earliestOffset.get({ topic }) ?? 0n);
    return { held: true, offset: s.groupOffset.get(groupId, topic) ?? 0n };
  });

  let closed = false;
  let closing: Promise<void> | undefined;
  const consumers = new Set<EmbeddedConsumer>();
  let wakeScheduled = false;
  let seenDataVersion: bigint | undefined;

  /** Runs a synchronous database operation; SQLite failures become BrokerUnavailableError. */
  const guard = <T>(operation: () => T, internal = false): T => {
    if (internal ? !db.open : closed) throw new BrokerUnavailableError('The embedded broker is closed');
    try {
      return operation();
    } catch (error) {
      throw toBrokerError(error);
    }
  };

  /** Publishes and pops of the same turn of the event loop share one transaction (see group-commit.ts). */
  const groupCommit = createGroupCommit(db, {
    mapError: toBrokerError,
    onCommitted: () => {
      scheduleWake();
      commitSignal.notify();
    },
  });

  const wakeAll = (): void => {
    wakeScheduled = false;
    for (const consumer of consumers) consumer.wake();
  };
  const scheduleWake = (): void => {
    if (wakeScheduled || consumers.size === 0) return;
    wakeScheduled = true;
    setImmediate(wakeAll);
  };
  const commitSignal = openCommitSignal(options.path, scheduleWake);

  /** Commits of other connections (other processes) change `data_version`; ours do not. */
  const poller = setInterval(() => {
    if (consumers.size === 0 || !db.open) return;
    try {
      const version = s.dataVersion.get();
      if (version !== seenDataVersion) {
        seenDataVersion = version;
        wakeAll();
      }
    } catch {
      // e.g. an I/O error: the next tick tries again, consumers report their own failures
    }
  }, pollIntervalMs);
  poller.unref();

  let pruning = false;
  const prune = async (): Promise<void> => {
    if (pruning || !db.open) return;
    pruning = true;
    try {
      const cutoff = Date.now() - retentionMs;
      for (const { topic, floor } of s.topicFloors.all()) {
        while (db.open && s.pruneRecords.run({ topic, floor, cutoff, chunk: PRUNE_CHUNK }).changes === PRUNE_CHUNK) await yieldTurn();
      }
      while (db.open && s.pruneIds.run({ cutoff, chunk: PRUNE_CHUNK }).changes === PRUNE_CHUNK) await yieldTurn();
    } catch {
      // busy or failing: the next run retries
    } finally {
      pruning = false;
    }
  };
  const pruner = setInterval(() => void prune(), retentionIntervalMs);
  pruner.unref();

  const source: ConsumerSource = {
    claim: (groupId, topic, owner, lease) =>
      guard(() => {
        // A plain read first: a member waiting for the lease of a live one takes no write lock.
        const current = s.lease.get(groupId, topic);
        if (current !== undefined && heldByOther(current, owner, Date.now())) return { held: false, retryAt: Number(current.expires_at) };
        return claimTx.immediate(groupId, topic, owner, lease);
      }, true),
    renew: (groupId, owner, lease) => guard(() => s.renewLeases.run(Date.now() + lease, groupId, owner).changes, true),
    release: (groupId, owner) => guard(() => void s.releaseLeases.run(groupId, owner), true),
    read: (topic, offset, limit) => guard(() => s.readFrom.all(topic, offset, limit).map(toRecord), true),
    commit: (groupId, topic, nextOffset) => guard(() => void s.commit.run(groupId, topic, nextOffset), true),
  };

  return {
    kind: 'embedded',

    async ensureTopics(topics) {
      for (const topic of topics) validTopic(topic);
      guard(() => topics.length > 0 && ensureTx.immediate(topics));
    },

    async publish(records) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      for (const record of records) validRecord(record);
      if (records.length === 0) return;
      await groupCommit.enqueue(() => publishTx(records));
    },

    async consume(consumeOptions) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      validConsumeOptions(consumeOptions);
      const consumer = createEmbeddedConsumer(source, consumeOptions, {
        owner: `${process.pid}:${randomUUID()}`,
        leaseMs,
        onStopped: (stopped) => {
          consumers.delete(stopped);
          scheduleWake(); // members of the same group in this process may claim its topics now
        },
      });
      consumers.add(consumer);
      return consumer;
    },

    async pop(topic, max) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`max must be an integer >= 0, got ${max}`);
      if (max === 0) return [];
      // Most polls find nothing: a plain read says so without taking the write lock.
      if (guard(() => s.hasDue.get(topic, Date.now())) === undefined) return [];
      return groupCommit.enqueue(() => popTx(topic, max));
    },

    async depth(topic, groupId) {
      return guard(() => {
        if (groupId === undefined) return Number(s.countAll.get(topic) ?? 0n);
        const from = s.groupOffset.get(groupId, topic) ?? s.earliestOffset.get({ topic }) ?? 0n;
        return Number(s.countFrom.get(topic, from) ?? 0n);
      });
    },

    async ping() {
      guard(() => s.ping.get(''));
    },

    isReady: () => !closed,

    close() {
      closing ??= (async () => {
        closed = true;
        groupCommit.close(new BrokerUnavailableError('The embedded broker is closed'));
        commitSignal.close();
        clearInterval(poller);
        clearInterval(pruner);
        await Promise.all([...consumers].map((consumer) => consumer.stop()));
        try {
          db.close();
        } catch (error) {
          throw toBrokerError(error);
        }
      })();
      return closing;
    },
  };
}

const openDatabase = (options: EmbeddedBrokerOptions): Database.Database => {
  try {
    return openSqlite({ ...options, schemaSql, schemaVersion: SCHEMA_VERSION });
  } catch (error) {
    if (error instanceof RangeError) throw error;
    throw new BrokerUnavailableError(`Cannot open the embedded broker at ${options.path}: ${messageOf(error)}`, { cause: error });
  }
};

/** A lease blocks others while it runs, unless its owner's process is gone (a crash frees it at once). */
const heldByOther = (lease: LeaseRow, owner: string, now: number): boolean =>
  lease.owner !== owner && Number(lease.expires_at) > now && processAlive(Number.parseInt(lease.owner, 10));

const processAlive = (pid: number): boolean => {
  if (!Number.isSafeInteger(pid) || pid <= 0 || pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code !== 'ESRCH';
  }
};

const toRecord = (row: RecordRow): ConsumedRecord => ({
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

const validTopic = (topic: unknown): void => {
  if (typeof topic !== 'string' || topic.length === 0) throw new TypeError(`A topic is a non-empty string, got ${String(topic)}`);
};

const validRecord = (record: OutgoingRecord): void => {
  validTopic(record.topic);
  if (typeof record.value !== 'string') throw new TypeError(`A record's value is a string (topic ${record.topic})`);
  if (record.dueAt !== undefined && !Number.isFinite(record.dueAt)) throw new TypeError(`dueAt is epoch ms (topic ${record.topic})`);
};

const validConsumeOptions = (options: Parameters<Broker['consume']>[0]): void => {
  if (typeof options.groupId !== 'string' || options.groupId.length === 0) throw new TypeError('groupId is a non-empty string');
  if (options.topics.length === 0) throw new TypeError('A consumer needs at least one topic');
  for (const topic of options.topics) validTopic(topic);
  const batchSize = options.batchSize ?? 100;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
};

const positive = (value: number, name: string): number => {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
};

const yieldTurn = () => new Promise<void>((resolve) => setImmediate(resolve));


/** SQLite failures become BrokerUnavailableError; our own errors pass. */
const toBrokerError = (error: unknown): unknown => {
  if (error instanceof BrokerUnavailableError || !(error instanceof Database.SqliteError)) return error;
  return new BrokerUnavailableError(`Embedded broker failure (${error.code}): ${error.message}`, { cause: error });
};
