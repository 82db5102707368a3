import type Database from 'better-sqlite3';
import { Heap } from 'heap-js';
import type { GroupCommit } from '../../sqlite/group-commit.ts';
import { policyOf, type TopicPolicyOf } from '../record-limits.ts';
import { sql, type HeadRow } from './schema.ts';

export interface LogMaintenanceOptions {
  /** Records every group of their topic committed past are deleted once older than this. */
  readonly consumedRetentionMs: number;
  /** Remembered ids are forgotten after this, or after the longest retention if that is longer. */
  readonly idRetentionMs: number;
  readonly topicPolicy: TopicPolicyOf;
  /** Rows deleted per write: each write shares a group commit with publishes and pops. */
  readonly chunk: number;
  /** Background failures (a busy database, a policy that throws): the next run tries again. */
  readonly onError: (error: unknown) => void;
}

export interface LogMaintenance {
  /** One retention pass over every topic and the remembered ids. Runs one at a time. */
  prune(): Promise<void>;
  /** Deletes the topics' records, remembered ids, group offsets and leases. */
  deleteTopics(topics: readonly string[]): Promise<void>;
}

/**
 * What keeps the embedded log bounded, and topic deletion. Everything is deleted in chunks of a
 * few hundred rows, each one a write of the group commit (infra/sqlite/group-commit.ts): it never
 * sleeps the thread on another connection's lock, and it holds the write lock for one chunk at a
 * time, so publishes and pops go on between chunks.
 *
 * Retention of a topic deletes, oldest first,
 * - records every consumer group of the topic committed past, once older than `consumedRetentionMs`
 *   (a topic no group consumes keeps them until they are popped);
 * - records older than the topic's policy `retentionMs`, consumed or not, popped or not.
 * It walks a topic from its oldest record and stops at the first one it must keep: records are
 * stored in offset order under the write lock, so their timestamps grow with their offsets (a wall
 * clock set back delays the deletion of what follows, it deletes nothing early).
 *
 * Remembered ids are pruned after the id window: `idRetentionMs`, or the longest retention of any
 * topic (consumed or policy) if that is longer, so that no record outlives the memory of its id
 * because of a retention.
 */
export const createLogMaintenance = (
  db: Database.Database,
  groupCommit: GroupCommit,
  options: LogMaintenanceOptions,
): LogMaintenance => {
  const s = {
    topicNames: db.prepare<[], string>(sql.topicNames).pluck(),
    topicFloors: db.prepare<[], { topic: string; floor: bigint }>(sql.topicFloors),
    head: db.prepare<[string], HeadRow>(sql.head),
    pruneRecords: db.prepare(sql.pruneRecords),
    pruneIds: db.prepare(sql.pruneIds),
    topicNextOffset: db.prepare<[string], bigint>(sql.topicNextOffset).pluck(),
    deleteGroupOffsets: db.prepare(sql.deleteGroupOffsets),
    deleteGroupLeases: db.prepare(sql.deleteGroupLeases),
    deleteRecordsChunk: db.prepare(sql.deleteRecordsChunk),
    deleteIdsChunk: db.prepare(sql.deleteIdsChunk),
  };
  const { chunk } = options;
  /**
   * The topics' names are read at every this many passes (every minute at the default pass of 5 s):
   * a topic created since is looked at by the pass that reads them, long before its first record can
   * expire (counting the topics at each pass to notice one at once cost as much as reading them).
   */
  const READ_NAMES_EVERY = 12;

  /**
   * Runs `write` in group-committed chunks until a chunk deletes fewer than `chunk` rows, pausing a
   * millisecond between chunks so that publishes and pops mostly commit without a chunk beside them.
   */
  const inChunks = async (write: () => number): Promise<void> => {
    while (db.open && (await groupCommit.enqueue(write)) === chunk) await new Promise((resolve) => setTimeout(resolve, 1));
  };

  /**
   * Topics no group consumes (an app's inbound queue), by the earliest time one of their records can
   * expire: the oldest record's time plus the retention, or, for a topic found empty, the time of
   * that look plus the retention (a record published later is younger). Until then a pass does not
   * look at them. Records only leave a topic from its oldest, so the time is never late. Session 30:
   * a pass read the oldest record of each of 25,000 inbound queues every 5 s, 3.5 % of a core idle.
   * Session 31: a pass no longer walks every topic to skip them either (read all 25,000 names, and
   * awaited each, 0.3 % of a core with its garbage): they wait in a queue by that time (`due`; an
   * entry whose time is not the topic's in `notBefore` is stale), and the names are read at every
   * `READ_NAMES_EVERY` passes.
   */
  const notBefore = new Map<string, number>();
  const due = new Heap<readonly [number, string]>((a, b) => a[0] - b[0]);
  const schedule = (topic: string, at: number) => {
    notBefore.set(topic, at);
    due.push([at, topic]);
  };

  /** The topics, each with its policy's retention (undefined: kept until consumed), read again when they changed. */
  const topics = new Map<string, number | undefined>();
  let longestPolicy = 0;
  let passesSinceNames = READ_NAMES_EVERY;
  const readNames = (consumed: ReadonlyMap<string, bigint>) => {
    if (++passesSinceNames < READ_NAMES_EVERY) return;
    passesSinceNames = 0;
    const names = new Set(s.topicNames.all());
    for (const topic of topics.keys()) if (!names.has(topic)) (topics.delete(topic), notBefore.delete(topic));
    longestPolicy = 0;
    for (const topic of names) {
      let retentionMs = topics.get(topic);
      if (!topics.has(topic)) {
        retentionMs = policyOf(options.topicPolicy, topic).retentionMs;
        topics.set(topic, retentionMs);
        if (retentionMs !== undefined && !consumed.has(topic)) schedule(topic, 0); // new: looked at in this pass
      }
      longestPolicy = Math.max(longestPolicy, retentionMs ?? 0);
    }
  };

  const pruneTopic = async (topic: string, floor: bigint | undefined, retentionMs: number | undefined, now: number): Promise<void> => {
    const consumedCutoff = floor === undefined ? -1 : now - options.consumedRetentionMs;
    const expiredCutoff = retentionMs === undefined ? -1 : now - retentionMs;
    // A plain read first: a topic with nothing to delete costs no write.
    const head = s.head.get(topic);
    const stored = head === undefined ? now : Number(head.timestamp);
    const deletable = head !== undefined && ((floor !== undefined && head.offset < floor && stored < consumedCutoff) || stored < expiredCutoff);
    if (deletable) await inChunks(() => s.pruneRecords.run({ topic, floor: floor ?? -1n, consumedCutoff, expiredCutoff, chunk }).changes);
    // Not consumed: looked at again once what is left can expire (after a deletion, next pass: what is left may expire too).
    if (floor === undefined && retentionMs !== undefined) schedule(topic, deletable ? now : stored + retentionMs);
  };

  /** Topics consumed at the last pass: one that no group consumes any more is looked at at once, then by its time. */
  let consumedBefore = new Map<string, bigint>();
  let pruning: Promise<void> | undefined;
  const pruneOnce = async (): Promise<void> => {
    const now = Date.now();
    const consumed = new Map(s.topicFloors.all().map(({ topic, floor }) => [topic, floor]));
    readNames(consumed);
    for (const topic of consumedBefore.keys()) if (!consumed.has(topic) && topics.get(topic) !== undefined) schedule(topic, 0);
    consumedBefore = consumed;
    const attempt = async (topic: string, floor: bigint | undefined) => {
      try {
        await pruneTopic(topic, floor, topics.get(topic), now);
      } catch (error) {
        if (floor === undefined) schedule(topic, now); // tried again at the next pass
        options.onError(error);
      }
    };
    // Consumed topics (a few: the outbound ones) at every pass, also one created since the names were read.
    for (const [topic, floor] of consumed) {
      if (!db.open) return;
      if (!topics.has(topic)) topics.set(topic, policyOf(options.topicPolicy, topic).retentionMs);
      await attempt(topic, floor);
    }
    // The others whose time has come (taken first: a topic pruned now is due again at the next pass).
    const dueNow: string[] = [];
    for (let next = due.peek(); next !== undefined && next[0] <= now; next = due.peek()) {
      due.pop();
      const [at, topic] = next;
      if (notBefore.get(topic) !== at || consumed.has(topic)) continue; // stale, or consumed (looked at above)
      notBefore.delete(topic);
      dueNow.push(topic);
    }
    for (const topic of dueNow) {
      if (!db.open) return;
      await attempt(topic, undefined);
    }
    const cutoff = now - Math.max(options.idRetentionMs, options.consumedRetentionMs, longestPolicy);
    await inChunks(() => s.pruneIds.run({ cutoff, chunk }).changes);
  };

  /**
   * Deletes what the topic held when this began; a record published meanwhile may stay (as if it
   * had been published after the deletion). The topic's offset counter stays: offsets are never
   * reused, so a consumer still holding an offset of the deleted topic skips nothing of a topic
   * published to again under the same name.
   */
  const deleteTopic = async (topic: string): Promise<void> => {
    const before = Date.now();
    // Groups first: a member of this process claims the topic again from whatever is left.
    const below = await groupCommit.enqueue(() =>
      db.transaction(() => {
        s.deleteGroupOffsets.run(topic);
        s.deleteGroupLeases.run(topic);
        return s.topicNextOffset.get(topic);
      })(),
    );
    if (below === undefined) return; // never published to nor ensured: nothing to delete
    await inChunks(() => s.deleteRecordsChunk.run({ topic, below, chunk }).changes);
    await inChunks(() => s.deleteIdsChunk.run({ topic, before, chunk }).changes);
  };

  return {
    prune: () =>
      (pruning ??= pruneOnce()
        .catch(options.onError)
        .finally(() => (pruning = undefined))),

    deleteTopics: async (topics) => {
      for (const topic of new Set(topics)) await deleteTopic(topic);
    },
  };
};
