import { createRequire } from 'node:module';

/**
 * kafkajs 2.2.4 (its last release) wakes every connection's request queue about once a millisecond
 * for as long as the connection lives: `scheduleCheckPendingRequests` sets a timer even when nothing
 * is pending, with a negative delay (Node makes it 1 ms), and the check it runs schedules the next
 * one (kafkajs issues #1556 and #1704; the fix proposed in pull request #1667, not merged). An idle
 * Relay on Kafka spent 4-5 % of a core in each thread on those wake-ups: ~2,500 `epoll_pwait` calls a
 * second per thread (session 33). With nothing pending there is nothing to check: a request that
 * cannot be sent at once is queued by `push`, which schedules the check again, and a response calls
 * the check itself. So the queue schedules it only when something is pending.
 *
 * Applied to kafkajs's own module (kafkajs stays in node_modules, scripts/build.mjs), once; if a
 * later kafkajs changes the method, this says so instead of patching blindly.
 */
interface RequestQueue {
  pending: unknown[];
  scheduleCheckPendingRequests(): void;
}

const EXPECTED_SOURCE_HINT = 'this.throttledUntil - Date.now()';
let applied = false;

export const fixKafkajsIdleWakeUps = (): void => {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  const RequestQueueClass = require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueue };
  const original = RequestQueueClass.prototype.scheduleCheckPendingRequests;
  if (typeof original !== 'function' || !original.toString().includes(EXPECTED_SOURCE_HINT)) {
    throw new Error('kafkajs RequestQueue.scheduleCheckPendingRequests is not the one infra/broker/kafka/request-queue-fix.ts corrects: check that fix against this kafkajs version');
  }
  RequestQueueClass.prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue) {
    if (this.pending.length === 0) return;
    original.call(this);
  };
};
