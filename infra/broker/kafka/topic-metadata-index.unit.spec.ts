import { createRequire } from 'node:module';
import { describe, expect, it, vi } from 'vitest';
import { indexKafkajsTopicMetadata } from './topic-metadata-index.ts';

const require = createRequire(import.meta.url);
indexKafkajsTopicMetadata();
const Cluster = require('kafkajs/src/cluster/index.js') as { prototype: object };
const BrokerPool = require('kafkajs/src/cluster/brokerPool.js') as { prototype: object };

interface TopicMetadata {
  topic: string;
  partitionMetadata: Array<{ partitionId: number }>;
}

/** A metadata answer whose array says whether anything scanned it (kafkajs's own code did, per topic). */
const answer = (topics: TopicMetadata[]) => {
  const topicMetadata = [...topics];
  const scans = { find: vi.fn(), some: vi.fn() };
  type Predicate = (entry: TopicMetadata) => boolean;
  Object.assign(topicMetadata, {
    find: (predicate: Predicate) => (scans.find(), Array.prototype.find.call(topicMetadata, predicate)),
    some: (predicate: Predicate) => (scans.some(), Array.prototype.some.call(topicMetadata, predicate)),
  });
  return { metadata: { topicMetadata }, scans };
};
const topics = (n: number): TopicMetadata[] => Array.from({ length: n }, (_, i) => ({ topic: `t${i}`, partitionMetadata: [{ partitionId: i }] }));

describe('kafkajs topic metadata looked up through an index (topic-metadata-index.ts)', () => {
  it('a topic\'s partitions are those of the first entry of its name, none for an unknown topic, and an error before metadata is loaded, without scanning the array', () => {
    const { metadata, scans } = answer([...topics(2_000), { topic: 't5', partitionMetadata: [{ partitionId: 99 }] }]);
    const cluster = Object.create(Cluster.prototype) as { brokerPool: unknown; findTopicPartitionMetadata(topic: string): unknown };
    cluster.brokerPool = { metadata };
    expect(cluster.findTopicPartitionMetadata('t5')).toEqual([{ partitionId: 5 }]);
    expect(cluster.findTopicPartitionMetadata('t1999')).toEqual([{ partitionId: 1999 }]);
    expect(cluster.findTopicPartitionMetadata('missing')).toEqual([]);
    expect(scans.find).not.toHaveBeenCalled();
    // A refresh replaces the answer: the new one is looked up, not the old index.
    cluster.brokerPool = answer([{ topic: 't5', partitionMetadata: [{ partitionId: 50 }] }]);
    expect(cluster.findTopicPartitionMetadata('t5')).toEqual([{ partitionId: 50 }]);
    expect(cluster.findTopicPartitionMetadata('t1999')).toEqual([]);
    cluster.brokerPool = { metadata: null };
    expect(() => cluster.findTopicPartitionMetadata('t5')).toThrow('Topic metadata not loaded');
  });

  it('metadata is refreshed when it is missing, expired, or lacks a wanted topic, and not otherwise, without scanning the array', async () => {
    const pool = Object.create(BrokerPool.prototype) as {
      metadata: unknown;
      metadataExpireAt: number | null;
      refreshMetadata: ReturnType<typeof vi.fn>;
      refreshMetadataIfNecessary(topics: string[]): Promise<unknown>;
    };
    pool.refreshMetadata = vi.fn(async () => 'refreshed');
    const { metadata, scans } = answer(topics(2_000));
    pool.metadata = null;
    pool.metadataExpireAt = null;
    expect(await pool.refreshMetadataIfNecessary(['t1'])).toBe('refreshed');
    pool.metadata = metadata;
    expect(await pool.refreshMetadataIfNecessary(['t1'])).toBe('refreshed'); // no expiry set
    pool.metadataExpireAt = Date.now() + 60_000;
    const wanted = topics(2_000).map(({ topic }) => topic);
    expect(await pool.refreshMetadataIfNecessary(wanted)).toBeUndefined();
    expect(pool.refreshMetadata).toHaveBeenCalledTimes(2);
    expect(await pool.refreshMetadataIfNecessary([...wanted, 'new'])).toBe('refreshed');
    expect(pool.refreshMetadata).toHaveBeenLastCalledWith([...wanted, 'new']);
    pool.metadataExpireAt = Date.now() - 1;
    expect(await pool.refreshMetadataIfNecessary(['t1'])).toBe('refreshed');
    expect(scans.some).not.toHaveBeenCalled();
  });
});
