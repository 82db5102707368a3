import { createRequire } from 'node:module';
import { expectKafkajsSource } from './kafkajs-source.ts';

/**
 * Two corrections to kafkajs 2.2.4's request queue (its last release; one per connection), both
 * about wake-ups of an idle process. Applied to kafkajs's own module (kafkajs stays in
 * node_modules, scripts/build.mjs), once per thread; if a later kafkajs changes a corrected method,
 * this says so instead of patching blindly.
 *
 * 1. `scheduleCheckPendingRequests` sets a timer even when nothing is pending, with a negative delay
 *    (Node makes it 1 ms), and the check it runs schedules the next one: every connection woke about
 *    once a millisecond for as long as it lived (kafkajs issues #1556 and #1704; the fix proposed in
 *    pull request #1667, not merged). An idle Relay on Kafka spent 4-5 % of a core in each thread on
 *    them (session 33). With nothing pending there is nothing to check: a request that cannot be
 *    sent at once is queued by `push`, which schedules the check again, and a response calls the
 *    check itself. So the queue schedules it only when something is pending.
 * 2. `scheduleRequestTimeoutCheck` gives every connection an interval of its own, every 100 ms
 *    (`Math.min(requestTimeout, 100)`), that times out its requests in flight: ten wake-ups a second
 *    per connection, and a Relay on Kafka holds about ten connections (each consumer, producer and
 *    admin client has its own). Here one interval per thread checks every queue that enforces
 *    request timeouts, with the same period and the same check; a queue leaves it when destroyed
 *    (on disconnect, or when the check finds it disconnected, as kafkajs's interval did). Relay's
 *    request timeouts are 2 s and more, so 100 ms is kafkajs's own precision for them.
 */
interface InflightRequest {
  sentAt: number;
  requestTimeout: number;
  timeoutRequest(): void;
}

interface RequestQueue {
  pending: unknown[];
  inflight: Map<unknown, InflightRequest>;
  enforceRequestTimeout: boolean;
  isConnected(): boolean;
  scheduleCheckPendingRequests(): void;
  scheduleRequestTimeoutCheck(): void;
  destroy(): void;
}

/** The period of the timeout check: kafkajs's own for a request timeout of 100 ms or more. */
export const REQUEST_TIMEOUT_CHECK_MS = 100;

/** Parts of the source of each method this corrects, as kafkajs 2.2.4 writes it. */
const EXPECTED: Record<'scheduleCheckPendingRequests' | 'scheduleRequestTimeoutCheck' | 'destroy', string[]> = {
  scheduleCheckPendingRequests: ['this.throttledUntil - Date.now()'],
  scheduleRequestTimeoutCheck: ['this.inflight.forEach', 'request.timeoutRequest()', 'Math.min(this.requestTimeout, 100)'],
  destroy: ['clearInterval(this.requestTimeoutIntervalId)'],
};

let applied = false;

/** The queues whose requests this thread's one interval times out. */
const watched = new Set<RequestQueue>();
let sweep: NodeJS.Timeout | undefined;

const checkTimeouts = () => {
  const now = Date.now();
  for (const queue of watched) {
    for (const request of queue.inflight.values()) if (now - request.sentAt > request.requestTimeout) request.timeoutRequest();
    if (!queue.isConnected()) queue.destroy();
  }
};

export const fixKafkajsIdleWakeUps = (): void => {
  if (applied) return;
  applied = true;
  const require = createRequire(import.meta.url);
  const { prototype } = require('kafkajs/src/network/requestQueue/index.js') as { prototype: RequestQueue };
  const originals = {
    scheduleCheckPendingRequests: prototype.scheduleCheckPendingRequests,
    scheduleRequestTimeoutCheck: prototype.scheduleRequestTimeoutCheck,
    destroy: prototype.destroy,
  };
  for (const [name, hints] of Object.entries(EXPECTED) as Array<[keyof typeof EXPECTED, string[]]>) expectKafkajsSource(`RequestQueue.${name}`, originals[name], hints, 'request-queue-fix.ts');
  prototype.scheduleCheckPendingRequests = function scheduleCheckPendingRequests(this: RequestQueue) {
    if (this.pending.length === 0) return;
    originals.scheduleCheckPendingRequests.call(this);
  };
  prototype.scheduleRequestTimeoutCheck = function scheduleRequestTimeoutCheck(this: RequestQueue) {
    if (!this.enforceRequestTimeout) return;
    this.destroy();
    watched.add(this);
    sweep ??= setInterval(checkTimeouts, REQUEST_TIMEOUT_CHECK_MS);
  };
  prototype.destroy = function destroy(this: RequestQueue) {
    watched.delete(this);
    if (watched.size === 0 && sweep !== undefined) {
      clearInterval(sweep);
      sweep = undefined;
    }
    originals.destroy.call(this);
  };
};
