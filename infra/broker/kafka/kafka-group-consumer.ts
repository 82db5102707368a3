import type { Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { RecordsNoLongerHeldError, type ConsumeOptions, type ConsumedRecord, type Consumer, type HeldRecords } from '../port.ts';
import { fromKafkaMessage } from './kafka-records.ts';
import { trackJoin } from './group-join.ts';
import { keepRunning } from './keep-running.ts';
import { whileRetriable } from './kafka-clients.ts';

/** How a member keeps its place in its group (docs/kafka-startup.md). */
export interface GroupTimeouts {
  /**
   * A member not heard of for this long is dropped from its group. A member SIGKILLed holds its
   * partitions until then, and a new member's join waits for it. At least the broker's
   * `group.min.session.timeout.ms` (6000 by default).
   */
  readonly sessionTimeoutMs: number;
  /** How often a member says it lives: between batches and while a handler runs. */
  readonly heartbeatIntervalMs: number;
  /**
   * How long a rebalance waits for the live members to join again. A member joins again once its
   * handler in flight returned, so this bounds the handler time a rebalance tolerates before the
   * member is dropped (its batch is then handed again: at-least-once, never lost).
   */
  readonly rebalanceTimeoutMs: number;
}

/**
 * How long the broker holds a group consumer's fetch that finds nothing, at most (and the heartbeat
 * interval, if shorter: kafkajs heartbeats between fetches). A record that comes answers it at once,
 * so this is not a delivery latency for a new record; a partition resumed after a record's due time
 * (a delivery's retry backoff) or a failed handler's rest is fetched only after the fetch in flight,
 * so while a partition is paused the wait is `PAUSED_FETCH_WAIT_MS` (250 ms; paused-fetch-wait.ts).
 * Issue 49: at 250 ms always, an idle Relay's delivery group asked Kafka four times a second.
 */
export const GROUP_FETCH_WAIT_MS = 1_000;
export const DEFAULT_GROUP_TIMEOUTS: GroupTimeouts = { sessionTimeoutMs: 6_000, heartbeatIntervalMs: 1_000, rebalanceTimeoutMs: 15_000 };

/** The defaults with what the options change, checked: a session holds at least three heartbeats. */
export const groupTimeoutsOption = (given: Partial<GroupTimeouts> | undefined): GroupTimeouts => {
  const timeouts = { ...DEFAULT_GROUP_TIMEOUTS, ...given };
  for (const [name, value] of Object.entries(timeouts))
    if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`groupTimeouts.${name} must be a positive integer, got ${value}`);
  if (timeouts.heartbeatIntervalMs * 3 > timeouts.sessionTimeoutMs)
    throw new RangeError(`groupTimeouts: a session (${timeouts.sessionTimeoutMs} ms) must hold at least three heartbeats (${timeouts.heartbeatIntervalMs} ms)`);
  return timeouts;
};

/** How long a partition rests after its handler threw, before the same records are fetched again. */
const RETRY_AFTER_ERROR_MS = 500;

/**
 * `Broker.consume` on Kafka: one kafkajs consumer in the caller's group. Records are handed in
 * order per partition, at most `batchSize` at a time and one handler call at a time; the offset
 * after a batch is committed once its handler resolved. A record whose due time is ahead pauses
 * its partition until then (other partitions and topics go on); a handler that throws pauses the
 * partition briefly and gets the same records again, since the offsets it did not resolve are
 * fetched anew.
 *
 * Resolves once the consumer is connected and subscribed; joining the group happens in the
 * background (it waits for the members of the group to join again, and for the session of a
 * member that died without leaving to run out). The member heartbeats while a handler runs, so
 * that a short session timeout does not drop a member whose handler is slow.
 *
 * `stop()` starts no handler call after it was called, waits for the one in flight (which commits),
 * and leaves the group. Called while the member is joining, it waits for the join to end first:
 * kafkajs cannot abandon a join, and disconnecting under one leaves a member behind that kafkajs
 * reconnects and that holds its partitions (measured: a group stuck in CompletingRebalance).
 */
export const startGroupConsumer = async (
  kafka: Kafka,
  options: ConsumeOptions,
  /** The port's name of a Kafka topic (without the deployment's prefix). */
  portTopic: (kafkaTopic: string) => string,
  log: Logger,
  timeouts: GroupTimeouts = DEFAULT_GROUP_TIMEOUTS,
): Promise<Consumer> => {
  const batchSize = options.batchSize ?? 100;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      run();
    }, ms);
    timers.add(timer);
  };
  let stopping: Promise<void> | undefined;
  const consumer = kafka.consumer({
    groupId: options.groupId,
    sessionTimeout: timeouts.sessionTimeoutMs,
    rebalanceTimeout: timeouts.rebalanceTimeoutMs,
    heartbeatInterval: timeouts.heartbeatIntervalMs,
    maxWaitTimeInMs: Math.max(100, Math.min(GROUP_FETCH_WAIT_MS, timeouts.heartbeatIntervalMs)),
    allowAutoTopicCreation: false,
    // A crash during stop() (its connections closing under a join) must not start it again.
    retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000, restartOnFailure: async () => stopping === undefined },
  });
  const report = (error: unknown) => {
    try {
      options.onError?.(error);
    } catch {
      // an onError that throws must not stop consumption
    }
  };
  // Whether a join is under way (a crash kafkajs restarts from joins again).
  const join = trackJoin(consumer);
  const standing = groupStanding(consumer, timeouts, log);
  const startedAt = Date.now();
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    log.info({ groupId: options.groupId, ms: Date.now() - startedAt, memberId: payload.memberId }, 'kafka consumer joined its group');
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    if (stopping !== undefined) return;
    log.warn({ err: payload.error, groupId: options.groupId, restart: payload.restart }, 'kafka consumer crashed');
    if (payload.restart) return;
    report(payload.error);
    kept.crashed();
  });
  await consumer.connect();
  try {
    // Right after the topics were created, a broker may not list them yet.
    await whileRetriable(() => consumer.subscribe({ topics: [...options.topics], fromBeginning: true }));
  } catch (error) {
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }

  // Not awaited: kafkajs resolves run() only once the group is joined.
  const runConsumer = () =>
    consumer
      .run({
        autoCommit: false,
        eachBatchAutoResolve: false,
        partitionsConsumedConcurrently: 1,
        eachBatch: async ({ batch, resolveOffset, heartbeat, commitOffsetsIfNecessary, isRunning, isStale, pause }) => {
          const { topic, partition } = batch;
          // The generation these records were fetched in: what the handler's hold is checked against.
          const held = standing.hold(heartbeat, `${topic}[${partition}]`);
          const records: ConsumedRecord[] = batch.messages.map((message) => fromKafkaMessage(portTopic(topic), partition, message));
          let i = 0;
          // Nothing new once stop() was called: what is not committed goes to the next owner.
          while (i < records.length && isRunning() && !isStale() && stopping === undefined) {
            const now = Date.now();
            const chunk: ConsumedRecord[] = [];
            while (i < records.length && chunk.length < batchSize) {
              const dueAt = records[i]!.dueAt;
              if (dueAt !== undefined && dueAt > now) break;
              chunk.push(records[i++]!);
            }
            if (chunk.length === 0) {
              // The head is not due: rest this partition until it is; the fetch resumes at the head.
              const resume = pause();
              later(records[i]!.dueAt! - now, resume);
              return;
            }
            // Heartbeats while the handler runs (a rebalance it reveals is joined after the handler).
            const beating = setInterval(() => void heartbeat().catch(standing.heartbeatFailed), timeouts.heartbeatIntervalMs);
            try {
              await options.handler(chunk, held);
            } catch (error) {
              report(error);
              const resume = pause();
              later(RETRY_AFTER_ERROR_MS, resume);
              return;
            } finally {
              clearInterval(beating);
            }
            const last = chunk[chunk.length - 1]!.offset;
            resolveOffset(String(last));
            await commitOffsetsIfNecessary({ topics: [{ topic, partitions: [{ partition, offset: String(last + 1n) }] }] });
            await heartbeat();
          }
        },
      })
      .catch(report);

  const kept = keepRunning(consumer, runConsumer, { stopping: () => stopping !== undefined, log, context: { groupId: options.groupId } });
  kept.start();

  return {
    stop: () =>
      (stopping ??= (async () => {
        kept.cancel();
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        await join.untilSettled();
        await consumer.disconnect();
        await kept.running();
      })()),
  };
};

/** Answers of the coordinator that say this member is no longer in the generation it fetched in. */
const LOST_MEMBERSHIP: ReadonlySet<unknown> = new Set(['REBALANCE_IN_PROGRESS', 'ILLEGAL_GENERATION', 'UNKNOWN_MEMBER_ID', 'FENCED_INSTANCE_ID']);

const typeOf = (error: unknown): unknown => (typeof error === 'object' && error !== null ? (error as { type?: unknown }).type : undefined);

const RESOLVED = Promise.resolve();

/**
 * The member's standing in its group, for the holds of its batches (HeldRecords, issue 48). Kafka's
 * coordinator gives a member's partitions to another once it has not heard from it for a session
 * (or once a rebalance it did not join ran out), but a member frozen meanwhile (SIGSTOP, a paused
 * VM) runs on afterwards with the records it had in hand, and learns of it only at its next
 * heartbeat or commit: it would hand to the messengers what the new owner has handed already.
 *
 * So a batch's hold is confirmed by the coordinator's answers: a heartbeat (or the join) answered
 * for this member's generation, counted from when its request was *sent* (kafkajs's request
 * events), not from when the answer was read: an answer read after a freeze says nothing of the
 * freeze. While the last such answer is younger than the session less two heartbeats (4 s of 6 s
 * by default), `confirm` resolves at once; past that it sends a heartbeat and waits for it. The
 * hold is lost for good once the member rejoins, begins a rebalance, crashes, or a heartbeat is
 * answered that the generation is over (rebalance in progress, unknown member, illegal generation).
 */
const groupStanding = (consumer: import('kafkajs').Consumer, timeouts: GroupTimeouts, log: Logger) => {
  const staleAfterMs = Math.max(timeouts.heartbeatIntervalMs, timeouts.sessionTimeoutMs - 2 * timeouts.heartbeatIntervalMs);
  /** Bumped whenever the member's generation may have changed: every hold made before is lost. */
  let epoch = 0;
  /** When the request was sent of the last answer that showed the member in its generation (epoch ms). */
  let confirmedAt = 0;
  /** When the last heartbeat and sync requests that were answered had been sent. */
  let heartbeatSentAt = 0;
  let syncSentAt = 0;
  consumer.on(consumer.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'Heartbeat') heartbeatSentAt = payload.sentAt;
    else if (payload.apiName === 'SyncGroup') syncSentAt = payload.sentAt;
  });
  consumer.on(consumer.events.HEARTBEAT, () => {
    confirmedAt = Math.max(confirmedAt, heartbeatSentAt);
  });
  consumer.on(consumer.events.GROUP_JOIN, () => {
    epoch++;
    confirmedAt = syncSentAt;
  });
  consumer.on(consumer.events.REBALANCING, () => void epoch++);
  consumer.on(consumer.events.CRASH, () => void epoch++);
  consumer.on(consumer.events.STOP, () => void epoch++);
  const heartbeatFailed = (error: unknown): void => {
    if (LOST_MEMBERSHIP.has(typeOf(error))) epoch++;
  };
  return {
    heartbeatFailed,
    /** The hold of a batch fetched now; `heartbeat` is the batch's (kafkajs sends it unless one was answered within an interval). */
    hold(heartbeat: () => Promise<void>, where: string): HeldRecords {
      const mine = epoch;
      let asking: Promise<void> | undefined;
      const lost = (why: string) => new RecordsNoLongerHeldError(`The records of ${where} may be another member's now: ${why}`);
      const ask = async (): Promise<void> => {
        const askedAt = Date.now();
        log.debug({ where, sinceConfirmedMs: askedAt - confirmedAt }, 'kafka consumer: hold not confirmed recently; asking the coordinator');
        try {
          await heartbeat();
        } catch (error) {
          heartbeatFailed(error);
          throw lost(`its heartbeat was not answered for its generation (${String(typeOf(error) ?? (error instanceof Error ? error.message : error))})`);
        }
        if (epoch !== mine) throw lost('its group generation changed');
        // An answer to a heartbeat sent before the pause proves nothing after it.
        if (askedAt - confirmedAt >= staleAfterMs) throw lost(`no heartbeat sent in the last ${staleAfterMs} ms was answered`);
      };
      return {
        confirm: () => {
          if (epoch !== mine) return Promise.reject(lost('its group generation changed'));
          if (Date.now() - confirmedAt < staleAfterMs) return RESOLVED;
          return (asking ??= ask().finally(() => (asking = undefined)));
        },
        stillHeld: () => epoch === mine && Date.now() - confirmedAt < staleAfterMs,
      };
    },
  };
};
