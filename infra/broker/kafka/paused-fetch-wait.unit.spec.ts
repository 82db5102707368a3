import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { PAUSED_FETCH_WAIT_MS, shortenFetchWaitWhilePaused } from './paused-fetch-wait.ts';

interface Group {
  maxWaitTime: number;
  pause(topicPartitions: Array<{ topic: string; partitions: number[] }>): void;
  resume(topicPartitions: Array<{ topic: string; partitions: number[] }>): void;
}

shortenFetchWaitWhilePaused();
const require = createRequire(import.meta.url);
const ConsumerGroup = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: object };
const SubscriptionState = require('kafkajs/src/consumer/subscriptionState.js') as new () => { assign(topicPartitions: Array<{ topic: string; partitions: number[] }>): void };
const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };

/** kafkajs's own consumer group, with the fields pause and resume use: its subscription state (assigned `retry` 0-2) and its wait. */
const group = (maxWaitTime: number): Group => {
  const subscriptionState = new SubscriptionState();
  subscriptionState.assign([{ topic: 'retry', partitions: [0, 1, 2] }]);
  return Object.assign(Object.create(ConsumerGroup.prototype) as Group, { maxWaitTime, subscriptionState, logger });
};

describe('kafkajs consumer groups: the fetch wait follows the paused partitions (paused-fetch-wait.ts)', () => {
  it('waits 250 ms while any partition is paused, and the wait it was made with once none is', () => {
    const g = group(1_000);
    g.pause([{ topic: 'retry', partitions: [0] }]);
    expect(g.maxWaitTime).toBe(PAUSED_FETCH_WAIT_MS);
    g.pause([{ topic: 'retry', partitions: [2] }]);
    g.resume([{ topic: 'retry', partitions: [0] }]);
    expect(g.maxWaitTime).toBe(PAUSED_FETCH_WAIT_MS);
    g.resume([{ topic: 'retry', partitions: [2] }]);
    expect(g.maxWaitTime).toBe(1_000);
  });

  it('never lengthens a wait shorter than 250 ms, and each group keeps its own', () => {
    const short = group(100);
    const other = group(1_000);
    short.pause([{ topic: 'retry', partitions: [1] }]);
    expect(short.maxWaitTime).toBe(100);
    short.resume([{ topic: 'retry', partitions: [1] }]);
    expect([short.maxWaitTime, other.maxWaitTime]).toEqual([100, 1_000]);
  });
});
