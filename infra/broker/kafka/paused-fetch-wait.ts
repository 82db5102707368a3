import { createRequire } from 'node:module';
import { expectKafkajsSource } from './kafkajs-source.ts';

/**
 * A correction of kafkajs 2.2.4's consumer group (its last release): the fetch wait follows the
 * group's paused partitions. A group consumer pauses a partition whose head record is not due yet
 * (a delivery's retry backoff) or whose handler failed, and resumes it later; kafkajs fetches a
 * resumed partition only with the fetch after the one in flight, which the broker holds for the
 * whole wait when nothing comes. So a long wait made retries late (1,000 ms: a retry with a 300 ms
 * backoff up to a second late, session 37), and a short one asked Kafka four times a second at rest
 * (issue 49). Here, while any partition of the group is paused, each fetch waits at most
 * `PAUSED_FETCH_WAIT_MS`; with none paused, the wait the consumer was made with.
 *
 * kafkajs's batch `pause()` and its resume, and the consumer's own pause and resume, all go through
 * `ConsumerGroup.pause`/`resume`, and the fetcher reads `maxWaitTime` at each fetch (and sleeps it
 * when every partition is paused). A batch's handler runs before the fetcher fetches again, so a
 * partition paused in a handler is never waited on by a long fetch. If a later kafkajs changes them,
 * this says so instead of patching blindly.
 */
export const PAUSED_FETCH_WAIT_MS = 250;

interface ConsumerGroup {
  maxWaitTime: number;
  subscriptionState: { paused(): unknown[] };
  pause(topicPartitions: unknown): void;
  resume(topicPartitions: unknown): void;
  fetch(nodeId: number): Promise<unknown>;
}

/** The wait the consumer was made with, per consumer group. */
const restingWait = new WeakMap<ConsumerGroup, number>();

/** Parts of the source of each method this relies on, as kafkajs 2.2.4 writes it. */
const EXPECTED: Record<'pause' | 'resume' | 'fetch', string[]> = {
  pause: ['this.subscriptionState.pause(topicPartitions)'],
  resume: ['this.subscriptionState.resume(topicPartitions)'],
  fetch: ['await sleep(this.maxWaitTime)', 'maxWaitTime: this.maxWaitTime'],
};

let applied = false;

export const shortenFetchWaitWhilePaused = (): void => {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  const { prototype } = require('kafkajs/src/consumer/consumerGroup.js') as { prototype: ConsumerGroup };
  const originals = { pause: prototype.pause, resume: prototype.resume, fetch: prototype.fetch };
  for (const [name, hints] of Object.entries(EXPECTED) as Array<[keyof typeof EXPECTED, string[]]>) expectKafkajsSource(`ConsumerGroup.${name}`, originals[name], hints, 'paused-fetch-wait.ts');
  const waitFor = (group: ConsumerGroup) => {
    let resting = restingWait.get(group);
    if (resting === undefined) restingWait.set(group, (resting = group.maxWaitTime));
    group.maxWaitTime = group.subscriptionState.paused().length > 0 ? Math.min(resting, PAUSED_FETCH_WAIT_MS) : resting;
  };
  prototype.pause = function pause(this: ConsumerGroup, topicPartitions: unknown) {
    originals.pause.call(this, topicPartitions);
    waitFor(this);
  };
  prototype.resume = function resume(this: ConsumerGroup, topicPartitions: unknown) {
    originals.resume.call(this, topicPartitions);
    waitFor(this);
  };
};
