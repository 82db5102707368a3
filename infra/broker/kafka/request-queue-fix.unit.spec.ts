import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { fixKafkajsIdleWakeUps, REQUEST_TIMEOUT_CHECK_MS } from './request-queue-fix.ts';

interface Queue {
  inflight: Map<number, { sentAt: number; requestTimeout: number; timeoutRequest(): void }>;
  scheduleRequestTimeoutCheck(): void;
  destroy(): void;
}
type QueueClass = new (options: Record<string, unknown>) => Queue;

fixKafkajsIdleWakeUps();
const RequestQueue = createRequire(import.meta.url)('kafkajs/src/network/requestQueue/index.js') as QueueClass;
const logger = { debug: () => undefined, info: () => undefined, warn: () => undefined, error: () => undefined };
const queue = (connected: () => boolean = () => true) =>
  new RequestQueue({ maxInFlightRequests: null, requestTimeout: 10_000, enforceRequestTimeout: true, clientId: 'test', broker: 'localhost:9092', logger, isConnected: connected });
const overdue = () => ({ sentAt: Date.now() - 20_000, requestTimeout: 10_000, timeoutRequest: vi.fn() });

describe('kafkajs request queues: one timeout check per thread (request-queue-fix.ts)', () => {
  const made: Queue[] = [];
  afterEach(() => {
    for (const q of made.splice(0)) q.destroy();
    vi.restoreAllMocks();
  });

  it('ten connections share one interval, which times out every queue\'s overdue requests and no others; the last queue destroyed clears it', async () => {
    const intervals = vi.spyOn(globalThis, 'setInterval');
    const cleared = vi.spyOn(globalThis, 'clearInterval');
    const queues = Array.from({ length: 10 }, () => queue());
    made.push(...queues);
    for (const q of queues) q.scheduleRequestTimeoutCheck();
    expect(intervals.mock.calls.map(([, delay]) => delay)).toEqual([REQUEST_TIMEOUT_CHECK_MS]);
    const late = overdue();
    const inTime = { sentAt: Date.now(), requestTimeout: 10_000, timeoutRequest: vi.fn() };
    queues[7]!.inflight.set(1, late);
    queues[7]!.inflight.set(2, inTime);
    await vi.waitFor(() => expect(late.timeoutRequest).toHaveBeenCalledTimes(1), { timeout: 1_000, interval: 10 });
    expect(inTime.timeoutRequest).not.toHaveBeenCalled();
    const clearedBefore = cleared.mock.calls.length;
    for (const q of queues.slice(1)) q.destroy();
    expect(cleared.mock.calls.length).toBe(clearedBefore + 9); // kafkajs's own clearInterval of each queue's (unset) id
    queues[0]!.destroy();
    expect(cleared.mock.calls.length).toBe(clearedBefore + 11); // and the shared interval, once the last queue is gone
  });

  it('a queue found disconnected leaves the check, as kafkajs destroyed its interval', async () => {
    let connected = true;
    const q = queue(() => connected);
    const other = queue();
    made.push(q, other);
    q.scheduleRequestTimeoutCheck();
    other.scheduleRequestTimeoutCheck();
    connected = false;
    const otherLate = overdue();
    other.inflight.set(1, otherLate);
    await vi.waitFor(() => expect(otherLate.timeoutRequest).toHaveBeenCalled(), { timeout: 1_000, interval: 10 });
    // Checked once more after it was found disconnected? Its overdue request would be timed out.
    const late = overdue();
    q.inflight.set(1, late);
    const nextOther = overdue();
    other.inflight.set(2, nextOther);
    await vi.waitFor(() => expect(nextOther.timeoutRequest).toHaveBeenCalled(), { timeout: 1_000, interval: 10 });
    expect(late.timeoutRequest).not.toHaveBeenCalled();
  });

  it('a queue that does not enforce timeouts is not checked', () => {
    const intervals = vi.spyOn(globalThis, 'setInterval');
    const q = new RequestQueue({ maxInFlightRequests: null, requestTimeout: 10_000, enforceRequestTimeout: false, clientId: 'test', broker: 'b', logger });
    made.push(q);
    q.scheduleRequestTimeoutCheck();
    expect(intervals).not.toHaveBeenCalled();
  });
});
