import { createRequire } from 'node:module';
import type { Kafka, KafkaMessage } from 'kafkajs';
import { expectKafkajsSource } from './kafkajs-source.ts';

/**
 * kafkajs's own connections and requests, below its consumer: the inbox tail fetches through them
 * (inbox-tail.ts) with a loop of its own, because kafkajs's consumer does, on every fetch, work in
 * proportion to every partition it reads (an idle tail following 2,000 topics spent 4 % of a core
 * in it, issue 49), joins a group of its own, and restarts to read one more topic.
 *
 * What is used, as kafkajs 2.2.4 (its last release) writes it: a Cluster made by the client's
 * private factory (its brokers, connections, SASL/SSL and versions as the client's), the broker
 * pool's `refreshMetadata(topics)` (one Metadata request naming those topics) and `findBroker`,
 * and a broker's `lookupRequest` and private `sendRequest`, through which a Fetch goes with its
 * answer decoded but not parsed: kafkajs's parse throws on the first partition with an error and
 * drops what the others brought. Each part is checked against its source before use.
 */

/** A record as kafkajs's record batch decoder gives it. */
export type WireRecord = KafkaMessage & { readonly isControlRecord?: boolean };

export interface FetchedPartition {
  readonly partition: number;
  readonly errorCode: number;
  readonly messages: readonly WireRecord[];
}

/** A Fetch answer (v7+ carry a session id and a top-level error). */
export interface FetchAnswer {
  readonly errorCode?: number;
  readonly sessionId?: number;
  readonly responses: ReadonlyArray<{ readonly topicName: string; readonly partitions: readonly FetchedPartition[] }>;
}

export interface FetchTopic {
  topic: string;
  partitions: Array<{ partition: number; fetchOffset: string; maxBytes: number }>;
}

export interface FetchArguments {
  readonly maxWaitTime: number;
  readonly minBytes: number;
  readonly maxBytes: number;
  readonly sessionId: number;
  readonly sessionEpoch: number;
  readonly topics: readonly FetchTopic[];
  readonly forgottenTopics: ReadonlyArray<{ topic: string; partitions: number[] }>;
}

export interface WireBroker {
  /** The Fetch version the broker and kafkajs agree on (sessions from 7). */
  fetchVersion(): number;
  fetch(args: FetchArguments): Promise<FetchAnswer>;
  /** The earliest offset of a partition this broker leads. */
  earliestOffset(topic: string, partition: number): Promise<bigint>;
}

export interface TopicLeaders {
  readonly topic: string;
  /** Each partition's leader (its node id; -1 while it has none). */
  readonly partitions: ReadonlyArray<{ readonly partition: number; readonly leader: number }>;
}

export interface WireCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  /** One Metadata request naming these topics; fails (UNKNOWN_TOPIC_OR_PARTITION) if one does not exist. Not concurrent with itself. */
  leadersOf(topics: readonly string[]): Promise<TopicLeaders[]>;
  broker(nodeId: number): Promise<WireBroker>;
}

interface BuiltRequest {
  request: { apiVersion: number };
  response: { decode: unknown; parse: (data: unknown) => Promise<unknown> };
}

interface KafkajsBroker {
  lookupRequest(apiKey: number, definitions: unknown): (options: Record<string, unknown>) => BuiltRequest;
  listOffsets(args: {
    isolationLevel: number;
    topics: Array<{ topic: string; partitions: Array<{ partition: number; timestamp: number }> }>;
  }): Promise<{ responses: Array<{ topic: string; partitions: Array<{ partition: number; offset: string }> }> }>;
}

interface KafkajsCluster {
  connect(): Promise<void>;
  disconnect(): Promise<void>;
  brokerPool: {
    metadata: { topicMetadata: Array<{ topic: string; partitionMetadata: Array<{ partitionId: number; leader: number }> }> } | null;
    refreshMetadata(topics: string[]): Promise<void>;
    findBroker(where: { nodeId: number }): Promise<KafkajsBroker>;
  };
}

/** kafkajs's isolation level for what a fetch may read: records of committed transactions (its consumer's default). */
const READ_COMMITTED = 1;
/** ListOffsets' timestamp for a partition's earliest offset. */
const EARLIEST = -2;

interface Internals {
  sendRequest: symbol;
  fetchKey: number;
  fetchRequests: unknown;
}
let internals: Internals | undefined;

const load = (): Internals => {
  if (internals) return internals;
  const require = createRequire(import.meta.url);
  const Client = require('kafkajs/src/index.js') as { toString(): string };
  const Broker = require('kafkajs/src/broker/index.js') as { prototype: object };
  const BrokerPool = require('kafkajs/src/cluster/brokerPool.js') as { prototype: Record<string, unknown> };
  const apiKeys = require('kafkajs/src/protocol/requests/apiKeys.js') as { Fetch: number };
  const { requests } = require('kafkajs/src/protocol/requests/index.js') as { requests: { Fetch?: unknown } };
  const v11 = require('kafkajs/src/protocol/requests/fetch/v11/request.js') as unknown;
  expectKafkajsSource('Client', Client, ['this[PRIVATE.CREATE_CLUSTER] = ({', 'allowAutoTopicCreation = true'], 'kafkajs-wire.ts');
  expectKafkajsSource('BrokerPool.refreshMetadata', BrokerPool.prototype.refreshMetadata, ['this.metadata = await broker.metadata(topics)'], 'kafkajs-wire.ts');
  expectKafkajsSource('Fetch v11 request', v11, ['sessionId', 'sessionEpoch', 'forgottenTopics'], 'kafkajs-wire.ts');
  const sendRequest = Object.getOwnPropertySymbols(Broker.prototype).find((symbol) => symbol.description === 'private:Broker:sendRequest');
  if (sendRequest === undefined || requests.Fetch === undefined)
    throw new Error('kafkajs Broker has no private sendRequest or no Fetch request: check infra/broker/kafka/kafkajs-wire.ts against this kafkajs version');
  internals = { sendRequest, fetchKey: apiKeys.Fetch, fetchRequests: requests.Fetch };
  return internals;
};

const createClusterOf = (kafka: Kafka): ((options: Record<string, unknown>) => KafkajsCluster) => {
  const symbol = Object.getOwnPropertySymbols(kafka).find((s) => s.description === 'private:Kafka:createCluster');
  const factory = symbol === undefined ? undefined : (kafka as unknown as Record<symbol, unknown>)[symbol];
  if (typeof factory !== 'function') throw new Error('kafkajs client has no private createCluster: check infra/broker/kafka/kafkajs-wire.ts against this kafkajs version');
  return factory as (options: Record<string, unknown>) => KafkajsCluster;
};

const wireBroker = (broker: KafkajsBroker, { sendRequest, fetchKey, fetchRequests }: Internals): WireBroker => {
  const send = (request: BuiltRequest) => (broker as unknown as Record<symbol, (request: BuiltRequest) => Promise<unknown>>)[sendRequest]!.call(broker, request);
  return {
    fetchVersion: () => broker.lookupRequest(fetchKey, fetchRequests)({ topics: [] }).request.apiVersion,
    fetch: async (args) => {
      const built = broker.lookupRequest(fetchKey, fetchRequests)({ ...args, isolationLevel: READ_COMMITTED, rackId: '' });
      // Decoded, not parsed: each partition's error is the caller's to handle.
      const unparsed: BuiltRequest = { ...built, response: { ...built.response, parse: async (data) => data } };
      return (await send(unparsed)) as FetchAnswer;
    },
    earliestOffset: async (topic, partition) => {
      const { responses } = await broker.listOffsets({ isolationLevel: READ_COMMITTED, topics: [{ topic, partitions: [{ partition, timestamp: EARLIEST }] }] });
      const offset = responses.find((r) => r.topic === topic)?.partitions.find((p) => p.partition === partition)?.offset;
      if (offset === undefined) throw new Error(`Kafka listed no earliest offset for ${topic}/${partition}`);
      return BigInt(offset);
    },
  };
};

/** The wire of a kafkajs client: its own cluster (connections apart from the client's other users). */
export const wireClusterOf = (kafka: Kafka): WireCluster => {
  const parts = load();
  const cluster = createClusterOf(kafka)({ allowAutoTopicCreation: false });
  const pool = cluster.brokerPool;
  const brokers = new WeakMap<KafkajsBroker, WireBroker>();
  return {
    connect: () => cluster.connect(),
    disconnect: () => cluster.disconnect(),
    leadersOf: async (topics) => {
      await cluster.connect();
      await pool.refreshMetadata([...topics]);
      const wanted = new Set(topics);
      return (pool.metadata?.topicMetadata ?? [])
        .filter(({ topic }) => wanted.has(topic))
        .map(({ topic, partitionMetadata }) => ({ topic, partitions: partitionMetadata.map(({ partitionId, leader }) => ({ partition: partitionId, leader })) }));
    },
    broker: async (nodeId) => {
      const broker = await pool.findBroker({ nodeId });
      let wire = brokers.get(broker);
      if (!wire) brokers.set(broker, (wire = wireBroker(broker, parts)));
      return wire;
    },
  };
};
