import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { BrokerUnavailableError, type Broker, type OutgoingRecord, type RoleLeases } from '../port.ts';
import { checkRecordSizes, maxRecordBytesOption, type TopicPolicyOf } from '../record-limits.ts';
import { positive, validConsumeOptions, validRecord, validTopic } from './argument-checks.ts';
import { createEmbeddedConsumer, type ConsumerSource, type EmbeddedConsumer } from './embedded-consumer.ts';
import { createEmbeddedRoleLeases } from './embedded-role-leases.ts';
import { createLeaseWrites } from './leases.ts';
import { createPops } from './pops.ts';
import { prepareStatements, toRecord } from './statements.ts';
import { watchCommits } from '../../sqlite/commit-watch.ts';
import { openCommitSignal } from '../../sqlite/commit-signal.ts';
import { createGroupCommit } from '../../sqlite/group-commit.ts';
import { CHECKPOINT_PAGES, LATE_CHECKPOINT_PAGES } from '../../sqlite/checkpoint-pages.ts';
import { messageOf, openSqlite, type SqliteSynchronous } from '../../sqlite/open-sqlite.ts';
import { unsyncedWrites } from '../../sqlite/unsynced-writes.ts';
import { createLogMaintenance } from './log-maintenance.ts';
import { schemaSql, SCHEMA_VERSION } from './schema.ts';

export type { SqliteSynchronous };

export interface EmbeddedBrokerOptions {
  /** Database file; its directory is created if missing. */
  readonly path: string;
  /** `PRAGMA synchronous` (see docs/durability.md). Default 'full'. */
  readonly synchronous?: SqliteSynchronous;
  /** How often consumers look for records published by other processes. Default 25. */
  readonly pollIntervalMs?: number;
  /**
   * With this, the broker watches its `-wal` file and looks every `pollIntervalMs` only for a
   * while after the file changed, and every `idlePollIntervalMs` otherwise
   * (`infra/sqlite/commit-watch.ts`); where the file cannot be watched it looks as without it.
   */
  readonly idlePollIntervalMs?: number;
  /** Records every consumer group of their topic committed past are deleted once older than this. Default 60000. */
  readonly retentionMs?: number;
  /**
   * Remembered ids (the de-duplication of published ids) are forgotten after this, or after the
   * longest retention (`retentionMs`, any topic's policy) if that is longer. Default 3600000 (1 h).
   */
  readonly idRetentionMs?: number;
  /** How often the retention runs. Default 5000. */
  readonly retentionIntervalMs?: number;
  /**
   * Whether this instance runs the retention and the file's checkpoints (default true). Several
   * instances on one file (the threads and processes of one host) need only one of them to: Relay
   * lets the delivery side do it. One without it checkpoints late (infra/sqlite/checkpoint-pages.ts).
   */
  readonly maintenance?: boolean;
  /**
   * How each topic is kept (by its port name). The log has one partition per topic whatever the
   * policy says; a `retentionMs` deletes records older than that, consumed or not. Default: one
   * partition, no retention.
   */
  readonly topicPolicy?: TopicPolicyOf;
  /** The largest record `publish` takes (value, key, headers and id, in UTF-8 bytes). Default 1 MiB. */
  readonly maxRecordBytes?: number;
  /** How long a member's claim on a topic outlives it if it hangs (a dead process loses it at once). Default 10000. */
  readonly groupLeaseMs?: number;
  /** How long a write waits for another connection's lock before failing. Default 5000. */
  readonly busyTimeoutMs?: number;
}

/** Rows deleted per write of the retention: few enough that a pop sharing its transaction hardly waits. */
const PRUNE_CHUNK = 200;

const defaultPolicy: TopicPolicyOf = () => ({ partitions: 1 });

/**
 * The embedded broker: a durable log in one SQLite file (WAL), shareable by the processes of one
 * host. Topics have one partition (0), whatever their policy says, and dense offsets from 0.
 *
 * - Publishes and pops are group-committed (`infra/sqlite/group-commit.ts`): those of one turn of
 *   the event loop share a `BEGIN IMMEDIATE` transaction, each in its own savepoint, and wait for
 *   another connection's write lock without stopping the thread. A record carrying an id is
 *   published once per topic, even after it was popped or consumed (until its id is forgotten
 *   after the id window, `idRetentionMs`). A pop deletes what it returns: a popped record is gone for every connection.
 * - Consumers are woken right after a publish of this thread (setImmediate) or of another thread
 *   of this process (a commit signal) and, when another process committed (`PRAGMA
 *   data_version`), within `pollIntervalMs` (with `idlePollIntervalMs`: looked for that often
 *   while the `-wal` file changes, commit-watch.ts).
 * - A pop that finds nothing due remembers it until a record may have come (`nothingDue`, pops.ts): the
 *   next empty pops of that topic, most polls, are answered without a query. A publish of this
 *   connection forgets it in its transaction, one of another thread of this process when its commit
 *   signal names the topic, one of another process when `data_version` says so (within
 *   `pollIntervalMs`); a record not due yet is remembered by when it falls due. So a pop may miss
 *   a record of another thread for as long as its signal takes, and of another process for up to
 *   `pollIntervalMs`: it is popped by the next pop, as if it had come a moment later.
 * - A pop with `accept` reads the due records without deleting them (no lock), hands them to
 *   `accept`, then deletes in the group commit those still there and returns exactly those:
 *   another popper (here or in another process) may have taken some meanwhile. Pops of this
 *   process offer each other disjoint records (offsets being accepted are reserved).
 * - Retention (log-maintenance.ts) deletes, in short chunks, records every group consuming their
 *   topic committed past once older than `retentionMs`, records older than their topic's policy
 *   retention, and remembered ids older than the id window. Records of a topic no group consumes
 *   and with no policy retention are kept until popped.
 * - `deleteTopics` deletes a topic's records, remembered ids, group offsets and leases, in the
 *   same short chunks; the topic's offset counter stays, so offsets are never reused.
 * - SQLite failures and use after close reject with BrokerUnavailableError.
 */
export function createEmbeddedBroker(options: EmbeddedBrokerOptions): Broker {
  const pollIntervalMs = positive(options.pollIntervalMs ?? 25, 'pollIntervalMs');
  const retentionMs = positive(options.retentionMs ?? 60_000, 'retentionMs');
  const idRetentionMs = positive(options.idRetentionMs ?? 3_600_000, 'idRetentionMs');
  const retentionIntervalMs = positive(options.retentionIntervalMs ?? 5_000, 'retentionIntervalMs');
  const maxRecordBytes = maxRecordBytesOption(options.maxRecordBytes);
  const leaseMs = positive(options.groupLeaseMs ?? 10_000, 'groupLeaseMs');
  const db = openDatabase(options);
  /** Consumers' offsets, their lease renewals and releases, and role leases: committed without a sync of their own (unsynced-writes.ts). */
  const bookkeeping = unsyncedWrites(db, options.synchronous ?? 'full');
  const s = prepareStatements(db);
  const leaseWrites = createLeaseWrites(db, s);

  /** Topics published to since the last commit: what this connection's commit signal names. */
  let publishedTopics = new Set<string>();

  const publishTx = db.transaction((records: readonly OutgoingRecord[]) => {
    const now = Date.now();
    const next = new Map<string, bigint>();
    for (const record of records) {
      let offset = next.get(record.topic);
      if (offset === undefined) {
        pops.forget(record.topic);
        publishedTopics.add(record.topic);
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

  const ensureTx = db.transaction((names: readonly string[]) => {
    for (const name of names) s.ensureTopic.run(name);
  });

  let closed = false;
  let closing: Promise<void> | undefined;
  const consumers = new Set<EmbeddedConsumer>();
  const roleLeases = new Set<RoleLeases>();
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
      commitSignal.notify([...publishedTopics]);
      publishedTopics = new Set();
    },
  });
  const pops = createPops(db, s, guard, groupCommit);

  const wakeAll = (): void => {
    wakeScheduled = false;
    for (const consumer of consumers) consumer.wake();
  };
  const scheduleWake = (): void => {
    if (wakeScheduled || consumers.size === 0) return;
    wakeScheduled = true;
    setImmediate(wakeAll);
  };
  const commitSignal = openCommitSignal(options.path, (topics) => {
    if (topics === undefined) pops.forgetAll();
    else for (const topic of topics) pops.forget(topic);
    scheduleWake();
    groupCommit.lockReleased();
  });

  /** Commits of other connections (other processes) change `data_version`; ours do not. */
  const look = () => {
    if ((consumers.size === 0 && !pops.remembersAny()) || !db.open) return;
    try {
      const version = s.dataVersion.get();
      if (version !== seenDataVersion) {
        seenDataVersion = version;
        pops.forgetAll();
        wakeAll();
      }
    } catch {
      // e.g. an I/O error: the next look tries again, consumers report their own failures
    }
  };
  const idlePollIntervalMs = options.idlePollIntervalMs === undefined ? undefined : positive(options.idlePollIntervalMs, 'idlePollIntervalMs');
  const poller = watchCommits({ file: options.path, busyMs: pollIntervalMs, idleMs: idlePollIntervalMs, look });

  const maintenance = createLogMaintenance(db, groupCommit, {
    consumedRetentionMs: retentionMs,
    idRetentionMs,
    topicPolicy: options.topicPolicy ?? defaultPolicy,
    chunk: PRUNE_CHUNK,
    onError: () => undefined, // busy, closing or a failing policy: the next run tries again
  });
  const pruner = setInterval(() => void maintenance.prune(), retentionIntervalMs);
  if (options.maintenance === false) clearInterval(pruner);
  pruner.unref();

  const source: ConsumerSource = {
    claim: (groupId, topic, owner, lease) => guard(() => leaseWrites.claim(groupId, topic, owner, lease), true),
    renew: (groupId, owner, lease) => guard(() => bookkeeping(() => s.renewLeases.run(Date.now() + lease, groupId, owner).changes), true),
    release: (groupId, owner) => guard(() => bookkeeping(() => void s.releaseLeases.run(groupId, owner)), true),
    read: (topic, offset, limit) => guard(() => s.readFrom.all(topic, offset, limit).map(toRecord), true),
    commit: (groupId, topic, nextOffset) => guard(() => bookkeeping(() => void s.commit.run(groupId, topic, nextOffset)), true),
  };

  return {
    kind: 'embedded',

    async ensureTopics(topics) {
      for (const topic of topics) validTopic(topic);
      guard(() => topics.length > 0 && ensureTx.immediate(topics));
    },

    maxRecordBytes,

    async publish(records) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      for (const record of records) validRecord(record);
      checkRecordSizes(records, maxRecordBytes);
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

    async leaseRoles(leaseOptions) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      const leases = createEmbeddedRoleLeases(
        {
          // Role leases need no sync: a power cut ends every process of the machine, so a lease
          // a restart finds is of a dead owner (free at once, or, its pid reused, once it ran out,
          // synced or not), and one the cut rolled back is taken again at the next round.
          take: (group, roles, owner, lease) => guard(() => bookkeeping(() => leaseWrites.takeRoles(group, roles, owner, lease)), true),
          anyFree: (group, roles, owner) => guard(() => leaseWrites.anyRoleFree(group, roles, owner), true),
          release: (group, owner) => guard(() => bookkeeping(() => void s.releaseLeases.run(group, owner)), true),
        },
        leaseOptions,
        { owner: `${process.pid}:${randomUUID()}`, leaseMs },
      );
      const tracked: RoleLeases = {
        stop: async () => {
          roleLeases.delete(tracked);
          await leases.stop();
        },
      };
      roleLeases.add(tracked);
      return tracked;
    },

    async pop(topic, max, popOptions) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`max must be an integer >= 0, got ${max}`);
      if (max === 0) return [];
      return pops.pop(topic, max, popOptions?.accept);
    },

    knownEmpty(topic) {
      return !closed && pops.remembersNothingDue(topic, Date.now());
    },

    async deleteTopics(topics) {
      if (closed) throw new BrokerUnavailableError('The embedded broker is closed');
      for (const topic of topics) validTopic(topic);
      await maintenance.deleteTopics(topics);
      for (const topic of topics) pops.forget(topic);
    },

    async depth(topic, groupId) {
      return guard(() => {
        if (groupId === undefined) return Number(s.countAll.get(topic) ?? 0n);
        // A group's lag as Kafka reckons it: offsets from where the group stands (or the earliest
        // record kept, if that is later) to the topic's end. Offsets are dense, so this is the
        // number of records left to it, found in three index lookups: counting the rows took the
        // scrape of /metrics 350-430 ms of the API thread with 300,000 deliveries waiting.
        const end = s.topicNextOffset.get(topic) ?? 0n;
        const earliest = s.earliestOffset.get({ topic }) ?? 0n;
        const committed = s.groupOffset.get(groupId, topic);
        const from = committed === undefined || committed < earliest ? earliest : committed;
        return end > from ? Number(end - from) : 0;
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
        poller.close();
        clearInterval(pruner);
        await Promise.all([...consumers].map((consumer) => consumer.stop()));
        await Promise.all([...roleLeases].map((leases) => leases.stop()));
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
    return openSqlite({ ...options, schemaSql, schemaVersion: SCHEMA_VERSION, autoCheckpointPages: options.maintenance === false ? LATE_CHECKPOINT_PAGES : CHECKPOINT_PAGES });
  } catch (error) {
    if (error instanceof RangeError) throw error;
    throw new BrokerUnavailableError(`Cannot open the embedded broker at ${options.path}: ${messageOf(error)}`, { cause: error });
  }
};

/** SQLite failures become BrokerUnavailableError; our own errors pass. */
const toBrokerError = (error: unknown): unknown => {
  if (error instanceof BrokerUnavailableError || !(error instanceof Database.SqliteError)) return error;
  return new BrokerUnavailableError(`Embedded broker failure (${error.code}): ${error.message}`, { cause: error });
};
