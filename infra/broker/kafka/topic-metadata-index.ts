import { createRequire } from 'node:module';
import { expectKafkajsSource } from './kafkajs-source.ts';

/**
 * Topic metadata looked up by name through an index, in kafkajs 2.2.4 (its last release).
 *
 * kafkajs keeps a cluster's metadata as an array of topics and finds a topic in it with
 * `Array.find`. Its consumer does that for every subscribed topic on every fetch (twice: the check
 * for a stale assignment and the choice of each partition's node), and the check whether metadata
 * must be refreshed does it for every subscribed topic too: a consumer of N topics spends N²/2
 * string comparisons three times per fetch. The inbox tail, when it was a kafkajs consumer (to
 * session 36), followed one topic per app it pops from: at 2,000 topics those lookups were most of
 * its idle CPU once its fetches kept a session, ~5 % of a core at one fetch a second. Relay's group
 * consumers (`consume`) still go through them.
 *
 * Here `Cluster.findTopicPartitionMetadata` and `BrokerPool.refreshMetadataIfNecessary` look topics
 * up in a map built once per metadata answer (kafkajs replaces the array on every refresh and never
 * changes one in place, so the map is keyed by the array itself). The answers are the same: the first entry of a name, as
 * `find` and `some` give. Applied to kafkajs's own classes, once per thread; if a later kafkajs
 * changed a method, this says so instead of patching blindly.
 */

interface TopicMetadata {
  topic: string;
  partitionMetadata: unknown[];
}

interface Metadata {
  topicMetadata?: TopicMetadata[];
}

interface Cluster {
  brokerPool: { metadata?: Metadata | null };
  findTopicPartitionMetadata(topic: string): unknown[];
}

interface BrokerPool {
  metadata?: Metadata | null;
  metadataExpireAt?: number | null;
  refreshMetadata(topics: string[]): Promise<unknown>;
  refreshMetadataIfNecessary(topics: string[]): Promise<unknown>;
}

/** Parts of the source of each method this replaces, as kafkajs 2.2.4 writes it. */
const EXPECTED = {
  findTopicPartitionMetadata: ['metadata.topicMetadata.find(t => t.topic === topic)', 'KafkaJSTopicMetadataNotLoaded', 'topicMetadata.partitionMetadata : []'],
  refreshMetadataIfNecessary: ['this.metadataExpireAt == null', 'Date.now() > this.metadataExpireAt', 'topicMetadata.topic === topic', 'this.refreshMetadata(topics)'],
};

const indexes = new WeakMap<TopicMetadata[], Map<string, TopicMetadata>>();

/** The topics of one metadata answer by name (the first entry of each name). */
const indexOf = (topics: TopicMetadata[]): Map<string, TopicMetadata> => {
  let index = indexes.get(topics);
  if (!index) {
    index = new Map();
    for (const entry of topics) if (!index.has(entry.topic)) index.set(entry.topic, entry);
    indexes.set(topics, index);
  }
  return index;
};

let applied = false;

export const indexKafkajsTopicMetadata = (): void => {
  if (applied) return;
  const require = createRequire(import.meta.url);
  const Cluster = require('kafkajs/src/cluster/index.js') as { prototype: Cluster };
  const BrokerPool = require('kafkajs/src/cluster/brokerPool.js') as { prototype: BrokerPool };
  const { KafkaJSTopicMetadataNotLoaded } = require('kafkajs/src/errors.js') as { KafkaJSTopicMetadataNotLoaded: new (message: string, details: object) => Error };
  expectKafkajsSource('Cluster.findTopicPartitionMetadata', Cluster.prototype.findTopicPartitionMetadata, EXPECTED.findTopicPartitionMetadata, 'topic-metadata-index.ts');
  expectKafkajsSource('BrokerPool.refreshMetadataIfNecessary', BrokerPool.prototype.refreshMetadataIfNecessary, EXPECTED.refreshMetadataIfNecessary, 'topic-metadata-index.ts');
  applied = true;

  Cluster.prototype.findTopicPartitionMetadata = function findTopicPartitionMetadata(this: Cluster, topic: string): unknown[] {
    const { metadata } = this.brokerPool;
    if (!metadata || !metadata.topicMetadata) throw new KafkaJSTopicMetadataNotLoaded('Topic metadata not loaded', { topic });
    return indexOf(metadata.topicMetadata).get(topic)?.partitionMetadata ?? [];
  };

  BrokerPool.prototype.refreshMetadataIfNecessary = async function refreshMetadataIfNecessary(this: BrokerPool, topics: string[]): Promise<unknown> {
    const { metadata, metadataExpireAt } = this;
    const shouldRefresh =
      metadata == null ||
      metadataExpireAt == null ||
      Date.now() > metadataExpireAt ||
      (() => {
        const index = indexOf(metadata.topicMetadata ?? []);
        return !topics.every((topic) => index.has(topic));
      })();
    if (shouldRefresh) return this.refreshMetadata(topics);
    return undefined;
  };
};
