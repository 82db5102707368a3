import type { Admin, Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import { heldRoles } from '../held-roles.ts';
import type { RoleLeaseOptions, RoleLeases } from '../port.ts';
import type { GroupTimeouts } from './kafka-group-consumer.ts';
import { trackJoin } from './group-join.ts';
import { keepRunning } from './keep-running.ts';
import { whileRetriable } from './kafka-clients.ts';

export interface KafkaRoleLeaseTarget {
  /** Kafka's names of the group and of the topic that stands for its roles. */
  readonly groupId: string;
  readonly topic: string;
}

/**
 * Role leases on Kafka's group protocol (docs/durability.md): the roles of a group are the
 * partitions of a topic of their own (role i is partition i; the topic never holds a record), and
 * the members of a consumer group over it hold the roles Kafka assigns them. Kafka's coordinator
 * is the arbiter: a member that leaves hands its roles over at once, one that dies loses them when
 * its session times out, and the survivors are assigned them in the rebalance that follows.
 *
 * A member gives its roles up (tells `onChange` it holds none) as soon as a rebalance begins, before
 * it joins again, and takes back what the new assignment gives it; and it gives them up when it has
 * not had a heartbeat answered for most of a session (the coordinator would drop it soon after), to
 * take them back when one is answered again. So two live members hold the same role only for as long
 * as a handler in flight takes to finish after its member learnt of the rebalance.
 */
export const startKafkaRoleLeases = async (
  kafka: Kafka,
  withAdmin: <T>(operation: (admin: Admin) => Promise<T>) => Promise<T>,
  target: KafkaRoleLeaseTarget,
  options: RoleLeaseOptions,
  log: Logger,
  timeouts: GroupTimeouts,
): Promise<RoleLeases> => {
  const { roles } = options;
  await ensureRoleTopic(withAdmin, target.topic, roles.length);
  let stopping: Promise<void> | undefined;
  let assigned = new Set<string>();
  const { report, tell, held } = heldRoles(options);
  let lastBeat = 0;
  const staleAfterMs = Math.max(timeouts.heartbeatIntervalMs, timeouts.sessionTimeoutMs - 2 * timeouts.heartbeatIntervalMs);


  const consumer = kafka.consumer({
    groupId: target.groupId,
    sessionTimeout: timeouts.sessionTimeoutMs,
    rebalanceTimeout: timeouts.rebalanceTimeoutMs,
    heartbeatInterval: timeouts.heartbeatIntervalMs,
    // The topic holds nothing: each fetch waits this long, then the member heartbeats (kafkajs
    // heartbeats between fetches, once `heartbeatIntervalMs` passed since the last answer: so about
    // one heartbeat per fetch). Half the interval until session 37: twice the fetches at rest.
    maxWaitTimeInMs: Math.max(100, timeouts.heartbeatIntervalMs),
    allowAutoTopicCreation: false,
    retry: { retries: 10, initialRetryTime: 200, maxRetryTime: 2_000, restartOnFailure: async () => stopping === undefined },
  });
  const join = trackJoin(consumer);
  consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
    lastBeat = Date.now();
    const partitions = payload.memberAssignment[target.topic] ?? [];
    assigned = new Set(partitions.flatMap((partition) => (roles[partition] === undefined ? [] : [roles[partition]!])));
    log.info({ group: options.group, roles: [...assigned] }, 'role leases: joined');
    if (stopping === undefined) tell(new Set(assigned));
  });
  // A heartbeat counts from when it was sent, not from when its answer was read: an answer read
  // after the process was frozen (SIGSTOP, a paused VM) says nothing of the time it was frozen, and
  // must not make the watchdog keep roles the coordinator has given to another member (issue 48).
  let heartbeatSentAt = 0;
  consumer.on(consumer.events.REQUEST, ({ payload }) => {
    if (payload.apiName === 'Heartbeat') heartbeatSentAt = payload.sentAt;
  });
  consumer.on(consumer.events.HEARTBEAT, () => {
    lastBeat = Math.max(lastBeat, heartbeatSentAt);
    // Answered again after a stall, for a heartbeat sent since: the coordinator still counts this
    // member with its assignment.
    if (stopping === undefined && held().size === 0 && assigned.size > 0 && Date.now() - lastBeat <= staleAfterMs) tell(new Set(assigned));
  });
  consumer.on(consumer.events.REBALANCING, () => {
    assigned = new Set();
    tell(new Set());
  });
  consumer.on(consumer.events.CRASH, ({ payload }) => {
    assigned = new Set();
    tell(new Set());
    if (stopping === undefined) log.warn({ err: payload.error, group: options.group, restart: payload.restart }, 'role leases: member crashed');
    if (payload.restart) return;
    report(payload.error);
    kept.crashed();
  });
  const watchdog = setInterval(() => {
    if (held().size > 0 && Date.now() - lastBeat > staleAfterMs) {
      log.warn({ group: options.group, roles: [...held()], sinceMs: Date.now() - lastBeat }, 'role leases: no heartbeat answered for most of a session; roles given up until one is');
      tell(new Set());
    }
  }, Math.max(50, Math.floor(timeouts.heartbeatIntervalMs / 2)));
  watchdog.unref();

  await consumer.connect();
  try {
    await whileRetriable(() => consumer.subscribe({ topics: [target.topic], fromBeginning: false }));
  } catch (error) {
    clearInterval(watchdog);
    await consumer.disconnect().catch(() => undefined);
    throw error;
  }
  const run = () => consumer.run({ autoCommit: false, eachBatch: async () => undefined }).catch(report);
  const kept = keepRunning(consumer, run, { stopping: () => stopping !== undefined, log, context: { group: options.group } });
  kept.start();

  return {
    stop: () =>
      (stopping ??= (async () => {
        kept.cancel();
        clearInterval(watchdog);
        tell(new Set());
        await join.untilSettled();
        await consumer.disconnect();
        await kept.running();
      })()),
  };
};

/** Creates the roles' topic with a partition per role, or adds the partitions an older one lacks. */
const ensureRoleTopic = async (withAdmin: <T>(operation: (admin: Admin) => Promise<T>) => Promise<T>, topic: string, count: number) => {
  await whileRetriable(() => withAdmin((admin) => admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: count, replicationFactor: -1 }] })));
  const metadata = await whileRetriable(() => withAdmin((admin) => admin.fetchTopicMetadata({ topics: [topic] })));
  const partitions = metadata.topics[0]?.partitions.length ?? 0;
  if (partitions < count) await whileRetriable(() => withAdmin((admin) => admin.createPartitions({ topicPartitions: [{ topic, count }] })));
};
