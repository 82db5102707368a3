import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import { Kafka, logLevel, Partitioners, type Admin, type Producer } from 'kafkajs';
import pino, { type Logger } from 'pino';
import { BrokerUnavailableError, RecordTooLargeError, type Broker, type Consumer, type OutgoingRecord } from '../port.ts';
import { checkRecordSizes, maxRecordBytesOption, policyOf, type TopicPolicyOf } from '../record-limits.ts';
import { InboxTail } from './inbox-tail.ts';
import { isTooLarge, isUnknownTopic, kafkaLogCreator, lazyClient, messageOf } from './kafka-clients.ts';
import { groupTimeoutsOption, startGroupConsumer, type GroupTimeouts } from './kafka-group-consumer.ts';
import { AcceptRejected, KafkaPops } from './kafka-pop.ts';
import { startKafkaRoleLeases } from './kafka-role-leases.ts';
import { toKafkaMessage } from './kafka-records.ts';
import { KafkaTopics } from './kafka-topics.ts';
import type { PopCursorStore } from './pop-cursor.ts';
import { BATCH_OVERHEAD_BYTES, encodedBytes, produceRequests, type OutgoingMessage } from './produce-requests.ts';
import { fixKafkajsIdleWakeUps } from './request-queue-fix.ts';
import { shortenFetchWaitWhilePaused } from './paused-fetch-wait.ts';
import { indexKafkajsTopicMetadata } from './topic-metadata-index.ts';

export interface KafkaBrokerOptions {
  /** host:port of the bootstrap brokers. */
  readonly brokers: readonly string[];
  /** Where pop claims are kept (the event store): shared by every process popping from the broker. */
  readonly cursors: PopCursorStore;
  readonly clientId?: string;
  /**
   * Put before every topic and group name on Kafka, so that several Relay deployments (or test
   * runs) can share one cluster. Default '' (topics named as the port names them).
   */
  readonly prefix?: string;
  /** Partitions of a created topic when no `topicPolicy` is given. Default 3. */
  readonly partitions?: number;
  /**
   * How each topic (by its port name, without the prefix) is created: its partitions, and its
   * `retention.ms` when the policy has a retention. Default: `partitions` partitions, the
   * broker's retention. A topic that exists already is left as it is.
   */
  readonly topicPolicy?: TopicPolicyOf;
  /** Replication factor of created topics (default: the broker's `default.replication.factor`). */
  readonly replicationFactor?: number;
  /** The largest record `publish` takes (value, key, headers and id, in UTF-8 bytes). Default 1 MiB. */
  readonly maxRecordBytes?: number;
  /**
   * Records of one publish are sent in produce requests of at most this many bytes of records
   * (one larger record goes alone). Default 512 KiB: well under the broker's `message.max.bytes`.
   */
  readonly maxRequestBytes?: number;
  /** How often the broker's reachability is probed, for `isReady()`. Default 1000 ms. */
  readonly probeIntervalMs?: number;
  /** Probing rests once reachability was not asked for (`isReady`, a pop, a follow) this long. Default 10 s. */
  readonly probeWhileAskedMs?: number;
  /** Records buffered per inbound partition for pops. Default 10,000. */
  readonly maxBuffered?: number;
  /** How long the broker holds the inbox tail's fetch when none of its topics has a new record. Default 1,000 ms. */
  readonly inboxTailWaitMs?: number;
  /** Session, heartbeat and rebalance timeouts of `consume`'s members (docs/kafka-startup.md). */
  readonly groupTimeouts?: Partial<GroupTimeouts>;
  readonly log?: Logger;
}

const DEFAULT_MAX_REQUEST_BYTES = 512 * 1024;
/**
 * The inbox tail's fetch wait. A record that comes answers a waiting fetch at once, so this is not a
 * delivery latency; it is how often an idle tail asks again, and the longest a topic followed anew
 * waits for the fetch in flight before it joins the next one. Each fetch keeps a session
 * (fetch-session.ts): an idle one names no partition, whatever the topics followed (issue 49,
 * scripts/bench/tail-idle.ts).
 */
const DEFAULT_INBOX_TAIL_WAIT_MS = 1_000;
/** The topic the reachability probe asks about (Relay never makes it; see `askForProbeTopic`). */
export const PROBE_TOPIC = 'relay-reachability-probe';
/** Kafka names `knownEmpty` keeps for the port names it was asked about (one per polled app). */
const MAX_KNOWN_EMPTY_NAMES = 100_000;

/**
 * The Broker port on Apache Kafka (kafkajs): an idempotent producer with acks=all, topics created
 * through the admin client as the TopicPolicy says (kafka-topics.ts), consumer groups for
 * `consume` (kafka-group-consumer.ts), and pops claimed through the event store (kafka-pop.ts,
 * docs/poll-on-kafka.md).
 *
 * Start-up blocks on nothing it need not (docs/kafka-startup.md): the broker is probed at once
 * and `isReady()` says true from the first answer; `consume` resolves once subscribed and joins
 * its group in the background.
 */
export const createKafkaBroker = (options: KafkaBrokerOptions): Broker => {
  const log = options.log ?? pino({ level: 'silent' });
  const clientId = options.clientId ?? 'relay';
  const prefix = options.prefix ?? '';
  const maxRecordBytes = maxRecordBytesOption(options.maxRecordBytes);
  const maxRequestBytes = options.maxRequestBytes ?? DEFAULT_MAX_REQUEST_BYTES;
  if (!Number.isSafeInteger(maxRequestBytes) || maxRequestBytes < 1024) throw new RangeError(`maxRequestBytes must be an integer >= 1024, got ${maxRequestBytes}`);
  const partitions = options.partitions ?? 3;
  const topicPolicy: TopicPolicyOf = options.topicPolicy ?? (() => ({ partitions }));
  const groupTimeouts = groupTimeoutsOption(options.groupTimeouts);
  /** Kafka's name of a port topic or group, and back. */
  const k = (name: string) => prefix + name;
  const portTopic = (kafkaTopic: string) => kafkaTopic.slice(prefix.length);
  const policyOfKafkaTopic = (kafkaTopic: string) => policyOf(topicPolicy, portTopic(kafkaTopic));
  const retentionOfKafkaTopic = (kafkaTopic: string) => policyOfKafkaTopic(kafkaTopic).retentionMs;
  /**
   * Kafka's names of the topics `knownEmpty` was asked about, by port name: an empty poll of a key
   * of 25 apps asks 25 of them, and a name made anew at each call is a new string to flatten and hash
   * for every set and map it is looked up in (issue 49). Bounded: cleared when full.
   */
  const knownEmptyNames = new Map<string, string>();
  const kafkaNameForKnownEmpty = (portName: string): string => {
    let name = knownEmptyNames.get(portName);
    if (name === undefined) {
      if (knownEmptyNames.size >= MAX_KNOWN_EMPTY_NAMES) knownEmptyNames.clear();
      knownEmptyNames.set(portName, (name = k(portName)));
    }
    return name;
  };
  /** The largest record batch a topic must take: a whole request, or one record alone, with overheads. */
  const maxMessageBytes = Math.max(maxRequestBytes, maxRecordBytes) + BATCH_OVERHEAD_BYTES;

  fixKafkajsIdleWakeUps();
  shortenFetchWaitWhilePaused();
  indexKafkajsTopicMetadata();
  const clientOptions = {
    brokers: [...options.brokers],
    logLevel: logLevel.ERROR,
    logCreator: kafkaLogCreator(log),
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { initialRetryTime: 100, retries: 6, maxRetryTime: 2_000 },
  };
  const kafka = new Kafka({ ...clientOptions, clientId });
  // The inbox tail's own client: its fetches go on connections of their own (kafkajs-wire.ts).
  const tailKafka = new Kafka({ ...clientOptions, clientId: `${clientId}-tail-${randomUUID().slice(0, 8)}` });
  // A client that fails at once, for the reachability probe: kafkajs otherwise retries for seconds.
  const probeKafka = new Kafka({
    clientId: `${clientId}-probe`,
    brokers: [...options.brokers],
    logLevel: logLevel.NOTHING,
    connectionTimeout: 1_000,
    requestTimeout: 2_000,
    retry: { retries: 0 },
  });

  let closed = false;
  /** The last probe's answer; undefined until the first one (isReady() is false until then). */
  let reachable: boolean | undefined;
  const consumers = new Set<Consumer>();
  /** A group member (a consumer, role leases) that close() stops if its owner has not. */
  const tracked = (member: Consumer): Consumer => {
    const handle: Consumer = {
      stop: async () => {
        consumers.delete(handle);
        await member.stop();
      },
    };
    consumers.add(handle);
    return handle;
  };

  const assertOpen = () => {
    if (closed) throw new BrokerUnavailableError('The Kafka broker client is closed');
  };
  /** Runs an operation, turning every failure but the caller's own into BrokerUnavailableError (503). */
  const guarded = async <T>(what: string, operation: () => Promise<T>): Promise<T> => {
    assertOpen();
    try {
      return await operation();
    } catch (error) {
      if (error instanceof AcceptRejected) throw error.error;
      if (error instanceof BrokerUnavailableError || error instanceof RecordTooLargeError || error instanceof RangeError) throw error;
      throw new BrokerUnavailableError(`Kafka ${what} failed: ${messageOf(error)}`, { cause: error });
    }
  };
  const admin = lazyClient<Admin>(() => kafka.admin({ retry: { retries: 4, initialRetryTime: 100, maxRetryTime: 1_000 } }));
  const producer = lazyClient<Producer>(() =>
    kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner }),
  );
  let probeAdmin = lazyClient<Admin>(() => probeKafka.admin());
  /**
   * The probe asks for the metadata of one topic, which need not exist: the broker's answer that it
   * does not (the admin client never has a topic created) is an answer. Not `describeCluster`: kafkajs
   * sends its empty topic list as null, and the broker answers with every topic's metadata, once a
   * second per thread (2,000 webhook apps' queues; issue 49).
   */
  const probeTopic = k(PROBE_TOPIC);
  const askForProbeTopic = async (client: Admin): Promise<void> => {
    try {
      await client.fetchTopicMetadata({ topics: [probeTopic] });
    } catch (error) {
      if (!isUnknownTopic(error)) throw error;
    }
  };
  const topics = new KafkaTopics({ admin, policy: policyOfKafkaTopic, replicationFactor: options.replicationFactor, maxMessageBytes });
  const withAdmin = <T>(operation: (client: Admin) => Promise<T>) => topics.withAdmin(operation);
  /** An admin operation on one topic: a missing topic fails it at once (see onTopic). */
  const onOneTopic = <T>(operation: (client: Admin) => Promise<T>) => topics.withAdmin(operation, false);

  let tail: Promise<InboxTail> | undefined;
  /** The tail once made (knownEmpty looks at it without waiting). */
  let tailMade: InboxTail | undefined;
  /** Until when `knownEmpty` is true for a port topic (0 when it is not): no record to pop in the tail's buffer, or no such topic. */
  const emptyUntil = (portName: string, now: number): number => {
    const topic = kafkaNameForKnownEmpty(portName);
    const absent = topics.absentUntil(topic, now);
    if (absent > now) return absent;
    return tailMade === undefined ? 0 : pops.emptyUntil(topic, tailMade, retentionOfKafkaTopic, now);
  };
  /** What `knownEmptyAll` found for a list of topics (a poll's): all empty, while the tail and the topics known stay the same, until a moment. */
  const allEmpty = new WeakMap<readonly string[], { tailChanges: number; forgotten: number; until: number }>();
  /** Told the port topics of records the tail fetched (watchArrivals). */
  const arrivalListeners = new Set<(topic: string) => void>();
  const arrived = (topic: string) => {
    for (const listener of arrivalListeners)
      try {
        listener(topic);
      } catch (error) {
        log.error({ err: error }, 'kafka: a listener to arrivals failed');
      }
  };
  const inboxTail = () =>
    (tail ??= Promise.resolve(
      (tailMade = new InboxTail({
        kafka: tailKafka,
        maxBuffered: options.maxBuffered ?? 10_000,
        maxWaitMs: options.inboxTailWaitMs ?? DEFAULT_INBOX_TAIL_WAIT_MS,
        portTopic,
        arrived,
        existing: async (wanted) => {
          const present = new Set(await withAdmin((client) => client.listTopics()));
          return wanted.filter((topic) => present.has(topic));
        },
        log,
      })),
    ));
  const pops = new KafkaPops({ cursors: options.cursors, tail: inboxTail, withAdmin: onOneTopic, portTopic });

  /** Forgets a topic this process learnt was deleted (here or by another process). */
  const forgetDeleted = async (deleted: readonly string[]) => {
    topics.forget(deleted);
    await tail?.then((t) => t.unfollow(deleted));
    await pops.forget(deleted);
  };
  /**
   * Runs an operation on one topic; undefined when the topic turns out to be deleted. A failure on
   * a missing topic may come from another topic the client once used: if this one still exists,
   * the operation runs once more (on the fresh client withAdmin made).
   */
  const onTopic = async <T>(topic: string, operation: () => Promise<T>): Promise<T | undefined> => {
    try {
      return await operation();
    } catch (error) {
      if (!isUnknownTopic(error)) throw error;
      topics.forget([topic]);
      if (await topics.exists(topic)) return operation();
      await forgetDeleted([topic]);
      return undefined;
    }
  };

  const probe = async (): Promise<void> => {
    try {
      await askForProbeTopic(await probeAdmin.get());
      reachable = true;
    } catch (error) {
      reachable = false;
      // A fresh client next time: one that failed may hold dead connections.
      const failed = probeAdmin;
      probeAdmin = lazyClient<Admin>(() => probeKafka.admin());
      await failed.close();
      throw error;
    }
  };
  void probe().catch(() => undefined); // at once: isReady() turns true as soon as the broker answers
  /**
   * Probing goes on while reachability is asked for, and rests otherwise: a thread that sends
   * nothing (role `all`'s pipeline thread, an idle API) need not ask Kafka every second (issue 49:
   * two probes a second were a tenth of an idle Relay's requests). The first ask after a rest
   * gets the last answer and probes at once.
   */
  const probeWhileAskedMs = options.probeWhileAskedMs ?? 10_000;
  let askedAt = Date.now();
  const askReachable = (): boolean | undefined => {
    const now = Date.now();
    if (now - askedAt > probeWhileAskedMs) void probe().catch(() => undefined);
    askedAt = now;
    return reachable;
  };
  const prober = setInterval(() => {
    if (Date.now() - askedAt <= probeWhileAskedMs) void probe().catch(() => undefined);
  }, options.probeIntervalMs ?? 1_000);
  prober.unref();

  /** Sends the records in produce requests of at most `maxRequestBytes`, one after the other. */
  const send = async (messages: readonly OutgoingMessage[]) => {
    const client = await producer.get();
    for (const request of produceRequests(messages, maxRequestBytes)) await client.sendBatch({ acks: -1, topicMessages: request });
  };

  /** Offsets per partition of the first record young enough to be kept (the topic has a retention). */
  const keptFrom = async (topic: string): Promise<Map<number, bigint>> => {
    const { retentionMs } = policyOfKafkaTopic(topic);
    if (retentionMs === undefined) return new Map();
    const offsets = await onOneTopic((client) => client.fetchTopicOffsetsByTimestamp(topic, Date.now() - retentionMs));
    return new Map(offsets.map(({ partition, offset }) => [partition, BigInt(offset)]));
  };
  const larger = (a: bigint, b: bigint | undefined) => (b !== undefined && b > a ? b : a);

  return {
    kind: 'kafka',
    maxRecordBytes,

    ensureTopics: (portTopics) => guarded('ensureTopics', () => topics.ensure(portTopics.map(k))),

    publish: (records: readonly OutgoingRecord[]) =>
      guarded('publish', async () => {
        checkRecordSizes(records, maxRecordBytes);
        if (records.length === 0) return;
        const messages = records.map((record): OutgoingMessage => {
          const message = toKafkaMessage(record);
          const bytes = encodedBytes(message);
          // Only a record of thousands of headers gets here: its framing would break the topic's limit.
          if (bytes > maxMessageBytes - BATCH_OVERHEAD_BYTES / 2) throw new RecordTooLargeError(record.topic, bytes, maxRecordBytes);
          return { topic: k(record.topic), message, bytes };
        });
        const named = [...new Set(messages.map((m) => m.topic))];
        await topics.ensure(named);
        try {
          await send(messages);
        } catch (error) {
          // A topic deleted since this process learnt of it: recreate it, on a producer whose
          // metadata does not name a missing topic, once.
          if (!isUnknownTopic(error)) throw isTooLarge(error) ? new BrokerUnavailableError(`Kafka refused a produce request as too large: ${messageOf(error)}`, { cause: error }) : error;
          producer.reset();
          topics.forget(named);
          await topics.ensure(named);
          await send(messages);
        }
      }),

    consume: (consumeOptions) =>
      guarded('consume', async () => {
        const kafkaTopics = consumeOptions.topics.map(k);
        await topics.ensure(kafkaTopics);
        return tracked(await startGroupConsumer(kafka, { ...consumeOptions, topics: kafkaTopics, groupId: k(consumeOptions.groupId) }, portTopic, log, groupTimeouts));
      }),

    leaseRoles: (leaseOptions) =>
      guarded('leaseRoles', async () => {
        const name = k(`roles.${leaseOptions.group}`);
        return tracked(await startKafkaRoleLeases(kafka, withAdmin, { groupId: name, topic: name }, leaseOptions, log, groupTimeouts));
      }),

    pop: (portName, max, popOptions) =>
      guarded('pop', async () => {
        if (askReachable() === false) throw new BrokerUnavailableError('The Kafka broker is not reachable');
        if (!Number.isSafeInteger(max) || max < 0) throw new RangeError(`max must be an integer >= 0, got ${max}`);
        const topic = k(portName);
        let popped: Awaited<ReturnType<Broker['pop']>> = [];
        if (max > 0 && (await topics.exists(topic)))
          popped = (await onTopic(topic, () => pops.pop(topic, max, popOptions?.accept, policyOfKafkaTopic(topic).retentionMs))) ?? [];
        // An empty pop may have settled without I/O: give the event loop a turn, so that a caller
        // popping in a loop cannot starve the tail's fetches.
        if (popped.length === 0) await setImmediate();
        return popped;
      }),

    // A webhook dispatcher's apps, followed by the tail in one restart instead of one per pop (a
    // restart costs seconds at 2,000 followed topics; session 36).
    follow: (portTopics) =>
      guarded('follow', async () => {
        if (askReachable() === false) throw new BrokerUnavailableError('The Kafka broker is not reachable');
        const present: string[] = [];
        for (const topic of new Set(portTopics.map(k))) if (await topics.exists(topic)) present.push(topic);
        if (present.length > 0) await pops.follow(present);
      }),

    // The webhook dispatcher is woken by the records the tail fetches (whoever published them)
    // instead of looking at every webhook app's queue each second (issue 49).
    watchArrivals: (listener) => {
      arrivalListeners.add(listener);
      return () => void arrivalListeners.delete(listener);
    },

    // What an empty pop would find, without its turn of the event loop (an empty poll of a key of 25
    // apps made 25 of them: 6× the CPU of one app's, issue 49). A topic that does not exist (an app
    // that never received a message) is empty as far as a pop's own look says (`exists`: a listing
    // at most 200 ms old); before, its pop was made at every poll (+29 % CPU at 25 apps, session 33).
    knownEmpty: (portName) => {
      if (closed || reachable !== true) return false;
      const now = Date.now();
      return emptyUntil(portName, now) > now;
    },

    // An empty poll of a key of 25 apps asked `knownEmpty` 25 times, ~150 ns each here (five lookups
    // and a map iterator per app): +21 % of CPU against one app (issue 49, session 38). Once all were
    // found empty, the answer holds until the tail fetches a record or forgets a topic, a topic is
    // forgotten, or the first record left for later falls due (emptyUntil).
    knownEmptyAll: (portNames) => {
      if (closed || reachable !== true || tailMade === undefined) return false;
      const now = Date.now();
      const memo = allEmpty.get(portNames);
      if (memo !== undefined && memo.tailChanges === tailMade.changes && memo.forgotten === topics.forgotten && now < memo.until) return true;
      const seen = { tailChanges: tailMade.changes, forgotten: topics.forgotten, until: Infinity };
      for (const portName of portNames) {
        const until = emptyUntil(portName, now);
        if (until <= now) {
          allEmpty.delete(portNames);
          return false;
        }
        if (until < seen.until) seen.until = until;
      }
      allEmpty.set(portNames, seen);
      return true;
    },

    deleteTopics: (portTopics) =>
      guarded('deleteTopics', async () => {
        const doomed = [...new Set(portTopics)].map(k);
        if (doomed.length === 0) return;
        await topics.delete(doomed);
        await forgetDeleted(doomed);
        // After the topics are gone: a claim appended before this reset is voided by it.
        for (const topic of doomed) await options.cursors.reset(portTopic(topic));
        // The producer's metadata names the topics it published to: one that is gone breaks it.
        producer.reset();
      }),

    depth: (portName, groupId) =>
      guarded('depth', async () => {
        const topic = k(portName);
        if (!(await topics.exists(topic))) return 0;
        const known = await onTopic(topic, () => Promise.all([onOneTopic((client) => client.fetchTopicOffsets(topic)), keptFrom(topic)]));
        if (known === undefined) return 0; // deleted meanwhile
        const [offsets, kept] = known;
        if (groupId !== undefined) {
          const [committed] = await withAdmin((client) => client.fetchOffsets({ groupId: k(groupId), topics: [topic] }));
          const at = new Map(committed?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
          return offsets.reduce((sum, { partition, high, low }) => {
            const committedAt = at.get(partition) ?? -1n;
            const from = larger(committedAt < 0n ? BigInt(low) : committedAt, kept.get(partition));
            return sum + Math.max(0, Number(BigInt(high) - from));
          }, 0);
        }
        const cursor = await pops.freshCursor(topic);
        return offsets.reduce((sum, { partition, high, low }) => {
          const from = larger(larger(cursor.floor(partition), BigInt(low)), kept.get(partition));
          return sum + Math.max(0, Number(BigInt(high) - from) - cursor.poppedFrom(partition, from));
        }, 0);
      }),

    ping: () => guarded('ping', probe),

    isReady: () => !closed && askReachable() === true,

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(prober);
      await Promise.all([...consumers].map((consumer) => consumer.stop()));
      await tail?.then((t) => t.stop()).catch(() => undefined);
      await Promise.all([producer.close(), admin.close(), probeAdmin.close()]);
    },
  };
};
