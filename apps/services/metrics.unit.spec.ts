import { describe, expect, it } from 'vitest';
import { defaultDeliveryPolicy } from '../../domain/delivery/policy.ts';
import type { Broker } from '../../infra/broker/port.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createMetrics, type MetricsSources } from './metrics.ts';
import { QUEUE_PUBLISHER_CATEGORIES, QUEUE_PUBLISHER_FILTER } from './topology.ts';

/** A broker whose depth answers from a table (or fails, or never answers). */
const fakeBroker = (depth: (topic: string, group?: string) => Promise<number>, ready = true) =>
  ({ kind: 'fake', depth, isReady: () => ready }) as unknown as Broker;

const fakeStore = (head: bigint, checkpoint: bigint | undefined | Error) =>
  ({
    headPosition: async () => head,
    readCheckpoint: async (name: string) => {
      if (checkpoint instanceof Error) throw checkpoint;
      return name === 'publisher' ? checkpoint : undefined;
    },
    // Every event after `after` is one the publisher reads.
    countAll: async ({ after = 0n, limit }: { after?: bigint; limit: number }) => Math.min(Number(head - after), limit),
  }) as unknown as EventStore;

const metricsOf = (sources: Partial<MetricsSources>) =>
  createMetrics({
    store: fakeStore(0n, 0n),
    broker: fakeBroker(async () => 0),
    deliveryPolicy: defaultDeliveryPolicy,
    ...sources,
  });

/** The sample lines of the scrape (no HELP/TYPE comments). */
const samples = async (metrics: ReturnType<typeof createMetrics>) =>
  (await metrics.registry.metrics()).split('\n').filter((line) => line !== '' && !line.startsWith('#'));

describe('metrics', () => {
  it('counts per label, starting every messenger and kind at 0', async () => {
    const metrics = metricsOf({});
    metrics.messagesAccepted.inc({ messenger: 'signal' }, 2);
    metrics.messagesDelivered.inc({ messenger: 'signal' });
    metrics.messagesFailed.inc({ messenger: 'session' });
    metrics.messagesAbandoned.inc({ messenger: 'session' });
    metrics.pollRequests.inc();
    metrics.pollPopped.inc(3);
    metrics.rateLimitRejections.inc({ kind: 'poll' });
    const lines = await samples(metrics);
    expect(lines).toEqual(
      expect.arrayContaining([
        'relay_messages_accepted_total{messenger="signal"} 2',
        'relay_messages_accepted_total{messenger="simplex"} 0',
        'relay_messages_delivered_total{messenger="signal"} 1',
        'relay_messages_failed_total{messenger="session"} 1',
        'relay_messages_abandoned_total{messenger="session"} 1',
        'relay_poll_requests_total 1',
        'relay_poll_popped_total 3',
        'relay_rate_limit_rejections_total{kind="poll"} 1',
        'relay_rate_limit_rejections_total{kind="send"} 0',
      ]),
    );
  });

  it('observes request durations by method, route and status code', async () => {
    const metrics = metricsOf({});
    metrics.httpRequestDuration.observe({ method: 'POST', route: '/api/v1/messages/send', status_code: 202 }, 0.003);
    const lines = await samples(metrics);
    expect(lines).toContain('relay_http_request_duration_seconds_bucket{le="0.005",method="POST",route="/api/v1/messages/send",status_code="202"} 1');
    expect(lines).toContain('relay_http_request_duration_seconds_count{method="POST",route="/api/v1/messages/send",status_code="202"} 1');
  });

  it('samples consumer lag, broker readiness and publisher checkpoint lag at scrape time', async () => {
    const asked: string[] = [];
    const metrics = metricsOf({
      broker: fakeBroker(async (topic, group) => {
        asked.push(`${group}/${topic}`);
        return topic === 'outbound.signal' ? 4 : 0;
      }),
      store: fakeStore(12n, 9n),
    });
    const lines = await samples(metrics);
    expect(asked).toEqual([
      'delivery/outbound.signal',
      'delivery/outbound.simplex',
      'delivery/outbound.session',
      'delivery/outbound.retry.1',
      'delivery/outbound.retry.2',
      'delivery/outbound.deferred',
    ]);
    expect(lines).toContain('relay_consumer_lag{group="delivery",topic="outbound.signal"} 4');
    expect(lines).toContain('relay_consumer_lag{group="delivery",topic="outbound.retry.2"} 0');
    expect(lines).toContain('relay_broker_ready 1');
    expect(lines).toContain('relay_publisher_checkpoint_lag 3');
    expect(lines.some((line) => line.startsWith('relay_process_cpu_user_seconds_total '))).toBe(true);
  });

  it('a publisher that never stored a checkpoint lags by the whole history', async () => {
    const lines = await samples(metricsOf({ store: fakeStore(5n, undefined) }));
    expect(lines).toContain('relay_publisher_checkpoint_lag 5');
  });

  it("counts the publisher's lag in the store, of the events it publishes from, up to 10,000", async () => {
    const asked: unknown[] = [];
    const store = fakeStore(50_000n, 7n);
    const counting = store.countAll.bind(store);
    store.countAll = async (options) => {
      asked.push(options);
      return counting(options);
    };
    expect(await samples(metricsOf({ store }))).toContain('relay_publisher_checkpoint_lag 10000');
    expect(asked).toEqual([{ after: 7n, filter: QUEUE_PUBLISHER_CATEGORIES, limit: 10_000 }]);
  });

  it('near the head, counts only the types the publisher reads: events it skips (webhook attempts) are no lag', async () => {
    const asked: unknown[] = [];
    const store = fakeStore(120n, 100n);
    store.countAll = async (options) => {
      asked.push(options);
      // 20 events of its categories after the checkpoint, none of a type it publishes from.
      return options.filter === QUEUE_PUBLISHER_FILTER ? 0 : 20;
    };
    expect(await samples(metricsOf({ store }))).toContain('relay_publisher_checkpoint_lag 0');
    expect(asked).toEqual([
      { after: 100n, filter: QUEUE_PUBLISHER_CATEGORIES, limit: 10_000 },
      { after: 100n, filter: QUEUE_PUBLISHER_FILTER, limit: 1_000 },
    ]);
  });

  it('a broker that fails or does not answer in time leaves the lag unset and reports not ready', async () => {
    let calls = 0;
    const failing = metricsOf({
      broker: fakeBroker(async () => {
        // The first scrape asks once per delivery topic (six), the second finds the broker down.
        if (++calls > 6) throw new Error('broker down');
        return 1;
      }),
    });
    expect(await samples(failing)).toContain('relay_consumer_lag{group="delivery",topic="outbound.signal"} 1');
    const lines = await samples(failing);
    expect(lines.filter((line) => line.startsWith('relay_consumer_lag'))).toEqual([]);
    expect(lines).toContain('relay_broker_ready 0');

    const hanging = metricsOf({ broker: fakeBroker(() => new Promise<number>(() => undefined)), collectTimeoutMs: 50 });
    const started = Date.now();
    const hung = await samples(hanging);
    expect(Date.now() - started).toBeLessThan(1000);
    expect(hung.filter((line) => line.startsWith('relay_consumer_lag'))).toEqual([]);
    expect(hung).toContain('relay_broker_ready 0');
  });

  it('a broker the adapter knows to be down is not ready even when depth answers', async () => {
    expect(await samples(metricsOf({ broker: fakeBroker(async () => 0, false) }))).toContain('relay_broker_ready 0');
  });

  it('an event store that fails leaves the checkpoint lag unset without failing the scrape', async () => {
    const lines = await samples(metricsOf({ store: fakeStore(5n, new Error('store down')) }));
    expect(lines.filter((line) => line.startsWith('relay_publisher_checkpoint_lag'))).toEqual([]);
    expect(lines).toContain('relay_broker_ready 1');
  });

  it('each instance has a registry of its own', async () => {
    const a = metricsOf({});
    const b = metricsOf({});
    a.pollRequests.inc();
    expect(await samples(a)).toContain('relay_poll_requests_total 1');
    expect(await samples(b)).toContain('relay_poll_requests_total 0');
    expect(a.registry.contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
  });
  it("gives this thread's heap, labelled by the thread's part: the API's where HTTP is served, the pipeline's otherwise", async () => {
    const heapOf = async (metrics: ReturnType<typeof createMetrics>) =>
      Object.fromEntries(
        (await samples(metrics))
          .filter((line) => line.startsWith('relay_thread_heap_bytes{'))
          .map((line) => [line.slice(0, line.lastIndexOf(' ')), Number(line.slice(line.lastIndexOf(' ') + 1))]),
      );
    const api = await heapOf(metricsOf({}));
    expect(Object.keys(api).sort()).toEqual([
      'relay_thread_heap_bytes{thread="api",measure="limit"}',
      'relay_thread_heap_bytes{thread="api",measure="total"}',
      'relay_thread_heap_bytes{thread="api",measure="used"}',
    ]);
    const used = api['relay_thread_heap_bytes{thread="api",measure="used"}']!;
    const total = api['relay_thread_heap_bytes{thread="api",measure="total"}']!;
    expect(used).toBeGreaterThan(0);
    expect(total).toBeGreaterThanOrEqual(used);
    expect(api['relay_thread_heap_bytes{thread="api",measure="limit"}']).toBeGreaterThan(total);
    expect(Object.keys(await heapOf(metricsOf({ processWide: false })))).toEqual([
      'relay_thread_heap_bytes{thread="pipeline",measure="used"}',
      'relay_thread_heap_bytes{thread="pipeline",measure="total"}',
      'relay_thread_heap_bytes{thread="pipeline",measure="limit"}',
    ]);
  });
});
