import { randomUUID } from 'node:crypto';
import { setImmediate } from 'node:timers/promises';
import { Kafka, logLevel, Partitioners, type Admin, type LogEntry, type Producer } from 'kafkajs';
import pino, { type Logger } from 'pino';
import { BrokerUnavailableError, type Broker, type ConsumedRecord, type Consumer, type OutgoingRecord } from '../port.ts';
import { InboxTail } from './inbox-tail.ts';
import { startGroupConsumer } from './kafka-group-consumer.ts';
import { toKafkaMessage } from './kafka-records.ts';
import { loadCursor, type PartitionClaim, type PopClaim, type PopCursor, type PopCursorStore } from './pop-cursor.ts';

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
  /** Partitions of a topic the broker creates; `inbound.*` topics always get 1 (one ordered queue). */
  readonly partitions?: number;
  /** Replication factor of created topics (default: the broker's `default.replication.factor`). */
  readonly replicationFactor?: number;
  /** How often the broker's reachability is probed, for `isReady()`. Default 1000 ms. */
  readonly probeIntervalMs?: number;
  /** Records buffered per inbound partition for pops. Default 10,000. */
  readonly maxBuffered?: number;
  readonly log?: Logger;
}

/** Attempts of one pop against claims of other processes before it gives up (503). */
const POP_ATTEMPTS = 20;

/** kafkajs logs through pino: errors as warnings (kafkajs retries them), the rest at debug. */
const kafkaLogCreator = (log: Logger) => () => (entry: LogEntry) => {
  const { message, ...extra } = entry.log;
  if (entry.level <= logLevel.ERROR) log.warn({ kafka: entry.namespace, ...extra }, message);
  else log.debug({ kafka: entry.namespace, ...extra }, message);
};

/**
 * The Broker port on Apache Kafka (kafkajs): an idempotent producer with acks=all, topics created
 * through the admin client, consumer groups for `consume`, and pops claimed through the event
 * store (see pop-cursor.ts and docs/poll-on-kafka.md).
 */
export const createKafkaBroker = (options: KafkaBrokerOptions): Broker => {
  const log = options.log ?? pino({ level: 'silent' });
  const clientId = options.clientId ?? 'relay';
  const prefix = options.prefix ?? '';
  /** Kafka's name of a port topic or group, and back. */
  const k = (name: string) => prefix + name;
  const portTopic = (kafkaTopic: string) => kafkaTopic.slice(prefix.length);
  const kafka = new Kafka({
    clientId,
    brokers: [...options.brokers],
    logLevel: logLevel.ERROR,
    logCreator: kafkaLogCreator(log),
    connectionTimeout: 3_000,
    requestTimeout: 10_000,
    retry: { initialRetryTime: 100, retries: 6, maxRetryTime: 2_000 },
  });
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
  let ready = true;
  const consumers = new Set<Consumer>();
  const knownTopics = new Set<string>();
  const cursors = new Map<string, PopCursor>();
  const locks = new Map<string, Promise<unknown>>();

  const assertOpen = () => {
    if (closed) throw new BrokerUnavailableError('The Kafka broker client is closed');
  };
  /** Runs an operation, turning every failure into BrokerUnavailableError (503). */
  const guarded = async <T>(what: string, operation: () => Promise<T>): Promise<T> => {
    assertOpen();
    try {
      return await operation();
    } catch (error) {
      if (error instanceof BrokerUnavailableError) throw error;
      throw new BrokerUnavailableError(`Kafka ${what} failed: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
  };
  /** Lazily connected clients; a failed connect is tried again on the next call. */
  const lazy = <T extends { connect(): Promise<void> }>(create: () => T) => {
    let connecting: Promise<T> | undefined;
    return {
      get: (): Promise<T> =>
        (connecting ??= (async () => {
          const client = create();
          await client.connect();
          return client;
        })().catch((error: unknown) => {
          connecting = undefined;
          throw error;
        })),
      close: async () => {
        const client = await connecting?.catch(() => undefined);
        connecting = undefined;
        await (client as unknown as { disconnect(): Promise<void> } | undefined)?.disconnect();
      },
    };
  };
  const admin = lazy<Admin>(() => kafka.admin({ retry: { retries: 4, initialRetryTime: 100, maxRetryTime: 1_000 } }));
  const producer = lazy<Producer>(() =>
    kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner }),
  );
  let probeAdmin = lazy<Admin>(() => probeKafka.admin());

  let tail: Promise<InboxTail> | undefined;
  const inboxTail = () =>
    (tail ??= admin.get().then(
      (client) =>
        new InboxTail({ kafka, admin: client, groupId: k(`relay-inbox-${randomUUID()}`), maxBuffered: options.maxBuffered ?? 10_000, portTopic, log }),
      (error: unknown) => {
        tail = undefined;
        throw error;
      },
    ));

  const probe = async (): Promise<void> => {
    try {
      await (await probeAdmin.get()).describeCluster();
      ready = true;
    } catch (error) {
      ready = false;
      // A fresh client next time: one that failed may hold dead connections.
      const failed = probeAdmin;
      probeAdmin = lazy<Admin>(() => probeKafka.admin());
      await failed.close().catch(() => undefined);
      throw error;
    }
  };
  const prober = setInterval(() => void probe().catch(() => undefined), options.probeIntervalMs ?? 1_000);
  prober.unref();

  const partitionsOf = (topic: string) => (portTopic(topic).startsWith('inbound.') ? 1 : (options.partitions ?? 3));

  const ensureTopics = async (topics: readonly string[]) => {
    const missing = [...new Set(topics)].filter((topic) => !knownTopics.has(topic));
    if (missing.length === 0) return;
    const client = await admin.get();
    await client.createTopics({
      waitForLeaders: true,
      topics: missing.map((topic) => ({ topic, numPartitions: partitionsOf(topic), replicationFactor: options.replicationFactor ?? -1 })),
    });
    for (const topic of missing) knownTopics.add(topic);
  };

  let listedAt = 0;
  /** Whether the topic exists; topics created elsewhere are learnt by listing, at most every 200 ms. */
  const topicExists = async (topic: string): Promise<boolean> => {
    if (knownTopics.has(topic)) return true;
    if (Date.now() - listedAt > 200) {
      listedAt = Date.now();
      for (const name of await (await admin.get()).listTopics()) knownTopics.add(name);
    }
    return knownTopics.has(topic);
  };

  /** One operation at a time per topic in this process (pops of one topic would claim alike). */
  const serialised = <T>(topic: string, operation: () => Promise<T>): Promise<T> => {
    const previous = locks.get(topic) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(operation);
    locks.set(topic, next);
    void next.finally(() => locks.get(topic) === next && locks.delete(topic)).catch(() => undefined);
    return next;
  };

  const cursorOf = async (topic: string, fresh = false): Promise<PopCursor> => {
    let cursor = cursors.get(topic);
    if (!cursor || fresh) cursors.set(topic, (cursor = await loadCursor(options.cursors, portTopic(topic))));
    return cursor;
  };

  /** What a pop would take from the buffer: due records not popped, oldest first, at most `max`. */
  const select = (source: InboxTail, topic: string, cursor: PopCursor, max: number) => {
    const now = Date.now();
    const candidates: ConsumedRecord[] = [];
    for (const [partition, buffer] of source.partitions(topic)) {
      source.drop(topic, partition, (record) => cursor.isPopped(partition, record.offset));
      for (const record of buffer.records) if (record.dueAt === undefined || record.dueAt <= now) candidates.push(record);
    }
    candidates.sort((a, b) => a.timestamp - b.timestamp || a.partition - b.partition || Number(a.offset - b.offset));
    const popped: ConsumedRecord[] = [];
    const skipped: ConsumedRecord[] = [];
    const ids = new Set<string>();
    for (const record of candidates) {
      if (popped.length >= max) break;
      if (record.id !== undefined && (cursor.wasPopped(record.id) || ids.has(record.id))) {
        skipped.push(record);
        continue;
      }
      if (record.id !== undefined) ids.add(record.id);
      popped.push(record);
    }
    if (popped.length === 0 && skipped.length === 0) return undefined;
    const partitions = new Map<number, { popped: bigint[]; skipped: bigint[] }>();
    const entry = (partition: number) => {
      let claim = partitions.get(partition);
      if (!claim) partitions.set(partition, (claim = { popped: [], skipped: [] }));
      return claim;
    };
    for (const record of popped) entry(record.partition).popped.push(record.offset);
    for (const record of skipped) entry(record.partition).skipped.push(record.offset);
    const claim: PopClaim = {
      partitions: [...partitions].map(([partition, offsets]): PartitionClaim => ({ partition, ...offsets })),
      ids: [...ids],
    };
    return { popped, claim };
  };

  const pop = async (topic: string, max: number): Promise<ConsumedRecord[]> => {
    if (!ready) throw new BrokerUnavailableError('The Kafka broker is not reachable');
    if (max <= 0 || !(await topicExists(topic))) return [];
    let cursor = await cursorOf(topic);
    const source = await inboxTail();
    if (!source.follows(topic)) {
      const floors = new Map<number, bigint>();
      for (const { partition } of await (await admin.get()).fetchTopicOffsets(topic)) floors.set(partition, cursor.floor(partition));
      await source.follow(topic, floors);
    }
    for (let attempt = 0; attempt < POP_ATTEMPTS; attempt++) {
      const selection = select(source, topic, cursor, max);
      if (!selection) return [];
      const version = await options.cursors.append(portTopic(topic), cursor.version, selection.claim);
      if (version === 'conflict') {
        cursor = await cursorOf(topic, true); // another process popped: see what it took
        continue;
      }
      cursor.apply(selection.claim, version);
      for (const { partition } of selection.claim.partitions) source.drop(topic, partition, (record) => cursor.isPopped(partition, record.offset));
      return selection.popped;
    }
    throw new BrokerUnavailableError(`Pop from ${topic} gave up: other processes kept claiming first`);
  };

  return {
    kind: 'kafka',

    ensureTopics: (topics) => guarded('ensureTopics', () => ensureTopics(topics.map(k))),

    publish: (records: readonly OutgoingRecord[]) =>
      guarded('publish', async () => {
        if (records.length === 0) return;
        const byTopic = new Map<string, OutgoingRecord[]>();
        for (const record of records) {
          const list = byTopic.get(k(record.topic));
          if (list) list.push(record);
          else byTopic.set(k(record.topic), [record]);
        }
        await ensureTopics([...byTopic.keys()]);
        await (await producer.get()).sendBatch({
          acks: -1,
          topicMessages: [...byTopic].map(([topic, list]) => ({ topic, messages: list.map(toKafkaMessage) })),
        });
      }),

    consume: (consumeOptions) =>
      guarded('consume', async () => {
        const topics = consumeOptions.topics.map(k);
        await ensureTopics(topics);
        const consumer = await startGroupConsumer(kafka, { ...consumeOptions, topics, groupId: k(consumeOptions.groupId) }, portTopic, log);
        const tracked: Consumer = {
          stop: async () => {
            consumers.delete(tracked);
            await consumer.stop();
          },
        };
        consumers.add(tracked);
        return tracked;
      }),

    pop: (topic, max) =>
      guarded('pop', async () => {
        const popped = await serialised(k(topic), () => pop(k(topic), max));
        // An empty pop may have settled without I/O: give the event loop a turn, so that a caller
        // popping in a loop cannot starve the tail's fetches.
        if (popped.length === 0) await setImmediate();
        return popped;
      }),

    depth: (portName, groupId) =>
      guarded('depth', async () => {
        const topic = k(portName);
        if (!(await topicExists(topic))) return 0;
        const client = await admin.get();
        const offsets = await client.fetchTopicOffsets(topic);
        if (groupId !== undefined) {
          const [committed] = await client.fetchOffsets({ groupId: k(groupId), topics: [topic] });
          const at = new Map(committed?.partitions.map((p) => [p.partition, BigInt(p.offset)]) ?? []);
          return offsets.reduce((sum, { partition, high, low }) => {
            const from = at.get(partition) ?? -1n;
            return sum + Number(BigInt(high) - (from < 0n ? BigInt(low) : from));
          }, 0);
        }
        const cursor = await serialised(topic, () => cursorOf(topic, true));
        return offsets.reduce((sum, { partition, high, low }) => {
          const floor = cursor.floor(partition) > BigInt(low) ? cursor.floor(partition) : BigInt(low);
          return sum + Math.max(0, Number(BigInt(high) - floor) - cursor.poppedAboveFloor(partition));
        }, 0);
      }),

    ping: () => guarded('ping', probe),

    isReady: () => !closed && ready,

    async close() {
      if (closed) return;
      closed = true;
      clearInterval(prober);
      await Promise.all([...consumers].map((consumer) => consumer.stop()));
      await tail?.then((t) => t.stop()).catch(() => undefined);
      await Promise.all([producer.close(), admin.close(), probeAdmin.close()].map((p) => p.catch(() => undefined)));
    },
  };
};
