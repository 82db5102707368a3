import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import v8 from 'node:v8';
import { AggregatorRegistry, collectDefaultMetrics, Counter, Gauge, Registry, type MetricObjectWithValues, type MetricValue } from 'prom-client';
import type { DeliveryPolicy } from '../../domain/delivery/policy.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import { createRequestDurations, type RequestDurations } from './request-durations.ts';
import type { Broker } from '../../infra/broker/port.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { checkpoints, DELIVERY_GROUP, deliveryTopics, QUEUE_PUBLISHER_CATEGORIES, QUEUE_PUBLISHER_FILTER } from './topology.ts';

export const METRICS_PREFIX = 'relay_';
const UNHEALTHY = ['daemon-unreachable', 'account-missing'] as const;
/** `events`: an event stream refused because its key has too many open. */
export const RATE_LIMIT_KINDS = ['send', 'poll', 'verify', 'events'] as const;
export type RateLimitKind = (typeof RATE_LIMIT_KINDS)[number];

/** The Prometheus metrics of one Relay process, on a registry of its own (not prom-client's global one). */
export interface RelayMetrics {
  readonly registry: Registry;
  /** Seconds per answered HTTP request; `route` is the route pattern, `unmatched` without one. */
  readonly httpRequestDuration: RequestDurations;
  /** Messages of send batches appended to the event store. */
  readonly messagesAccepted: Counter<'messenger'>;
  /** Recorded delivery outcomes (duplicates of a known outcome are not counted). */
  readonly messagesDelivered: Counter<'messenger'>;
  readonly messagesFailed: Counter<'messenger'>;
  readonly messagesAbandoned: Counter<'messenger'>;
  /** Polls answered 200, and the messages they returned. */
  readonly pollRequests: Counter;
  readonly pollPopped: Counter;
  readonly rateLimitRejections: Counter<'kind'>;
  /** Data keys destroyed, by why (docs/privacy.md). */
  readonly bodiesForgotten: Counter<'reason'>;
  /** Inbound records a poll found whose body was forgotten before anyone polled them. */
  readonly pollForgotten: Counter;
  /** Webhook attempts by outcome, failed ones by kind, and messages given up on (docs/webhooks.md). */
  readonly webhookAttempts: Counter<'outcome'>;
  readonly webhookFailures: Counter<'kind'>;
  readonly webhooksAbandoned: Counter;
  /** Inbound Session messages not handed on, by kind (docs/messengers.md): signals, what Relay cannot carry, what failed a check. */
  readonly sessionInboundSkipped: Counter<'kind'>;
  /** 1 for each leased role running in this process (docs/durability.md), 0 for the others. */
  readonly rolesHeld: Gauge<'group' | 'role'>;
}

export interface MetricsSources {
  readonly store: EventStore;
  readonly broker: Broker;
  readonly deliveryPolicy: DeliveryPolicy;
  /** The app-messengers, whose health the unhealthy gauge counts at scrape time. */
  readonly apps?: Pick<AppsProjection, 'allAppMessengers'>;
  /** Bound of each scrape-time query of the stores. Default 1000 ms. */
  readonly collectTimeoutMs?: number;
  /**
   * Whether this registry also has the process's own metrics (memory, CPU, event loop) and the
   * store gauges sampled at scrape time. Default true; false for a thread whose counters are
   * added to another thread's registry (they would be counted twice).
   */
  readonly processWide?: boolean;
}

/** A registry's metrics as data, to be sent to the thread that serves `/metrics`. */
export type MetricsSnapshot = MetricObjectWithValues<MetricValue<string>>[];

/** The Prometheus text of `registry` with the counters and histograms of `others` added to its own. */
export const mergedMetricsText = async (registry: Registry, others: readonly MetricsSnapshot[]): Promise<string> =>
  others.length === 0 ? registry.metrics() : AggregatorRegistry.aggregate([await registry.getMetricsAsJSON(), ...others]).metrics();

/** Rejects when `work` has not settled within `ms`. */
const within = <T>(ms: number, work: Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
};

/** The publisher's lag is counted up to this many events. */
const LAG_COUNT_CAP = 10_000;
/** Below this many events of its categories, the publisher's lag counts only the types it reads (read, not only indexed). */
const EXACT_LAG_BELOW = 1_000;

type BrokerSample = { ok: true; depths: number[] } | { ok: false };

export const createMetrics = ({ store, broker, deliveryPolicy, apps, collectTimeoutMs = 1000, processWide = true }: MetricsSources): RelayMetrics => {
  const registry = new Registry();
  const registers = [registry];
  // The event-loop delay is sampled every 50 ms, not prom-client's 10: its timer woke an idle API
  // thread 100 times a second, most of what an idle Relay spent there (session 30: 0.65 % of a core).
  // A stall shorter than 50 ms can fall between two samples and go unseen; a longer one never does.
  if (processWide) collectDefaultMetrics({ register: registry, prefix: METRICS_PREFIX, eventLoopMonitoringPrecision: 50 });
  // Sampled at scrape time from the stores: only where the scrape is answered.
  const gaugeRegisters = processWide ? registers : [];

  const perMessenger = (name: string, help: string) => {
    const counter = new Counter({ name: `${METRICS_PREFIX}${name}`, help, labelNames: ['messenger'] as const, registers });
    for (const messenger of MESSENGERS) counter.inc({ messenger }, 0);
    return counter;
  };

  const lagTopics = deliveryTopics(deliveryPolicy);
  // The lag and readiness gauges collect concurrently within one scrape: they share one sample.
  let sampling: Promise<BrokerSample> | undefined;
  const sampleBroker = () =>
    (sampling ??= within(collectTimeoutMs, Promise.all(lagTopics.map((topic) => broker.depth(topic, DELIVERY_GROUP))))
      .then((depths): BrokerSample => ({ ok: true, depths }))
      .catch((): BrokerSample => ({ ok: false }))
      .finally(() => (sampling = undefined)));

  new Gauge({
    name: `${METRICS_PREFIX}consumer_lag`,
    help: 'Records not yet consumed by the consumer group, per topic (sampled at scrape time)',
    labelNames: ['group', 'topic'] as const,
    registers: gaugeRegisters,
    async collect() {
      const sample = await sampleBroker();
      this.reset();
      if (sample.ok) lagTopics.forEach((topic, i) => this.set({ group: DELIVERY_GROUP, topic }, sample.depths[i]!));
    },
  });
  if (apps) {
    new Gauge({
      name: `${METRICS_PREFIX}app_messengers_unhealthy`,
      help: "App-messengers whose daemon cannot be reached or no longer has the bot's account, by messenger and health",
      labelNames: ['messenger', 'health'] as const,
      registers: gaugeRegisters,
      collect() {
        this.reset();
        for (const messenger of MESSENGERS) for (const health of UNHEALTHY) this.set({ messenger, health }, 0);
        for (const m of apps.allAppMessengers()) if (m.health !== 'ok') this.inc({ messenger: m.messenger, health: m.health });
      },
    });
  }
  new Gauge({
    name: `${METRICS_PREFIX}broker_ready`,
    help: '1 while the broker is reachable, else 0',
    registers: gaugeRegisters,
    async collect() {
      const sample = await sampleBroker();
      this.set(sample.ok && broker.isReady() ? 1 : 0);
    },
  });
  new Gauge({
    name: `${METRICS_PREFIX}publisher_checkpoint_lag`,
    help: `Events the publisher has yet to move to the broker (sampled at scrape time; counted up to ${LAG_COUNT_CAP}; from ${EXACT_LAG_BELOW} on, the other events of its categories are counted too)`,
    registers: gaugeRegisters,
    async collect() {
      try {
        // Entries of the store's index counted, no event read: 10,000 events read to be counted
        // held the API thread ~135 ms while the publisher was behind.
        const pending = await within(
          collectTimeoutMs,
          (async () => {
            const after = (await store.readCheckpoint(checkpoints.queuePublisher)) ?? 0n;
            const ofCategories = await store.countAll({ after, filter: QUEUE_PUBLISHER_CATEGORIES, limit: LAG_COUNT_CAP });
            // Near the head, only the events it publishes from: the others of its categories (a
            // webhook attempt, a delivery recorded) do not move its checkpoint until the next one
            // it reads, and counted as lag for ever on a Relay whose last events were such
            // (session 30). Up to EXACT_LAG_BELOW events are read for that, none beyond.
            return ofCategories < EXACT_LAG_BELOW ? store.countAll({ after, filter: QUEUE_PUBLISHER_FILTER, limit: EXACT_LAG_BELOW }) : ofCategories;
          })(),
        );
        this.set(pending);
      } catch {
        this.remove();
      }
    },
  });

  // Each thread's V8 heap: prom-client's own heap metrics are the API thread's alone, and role
  // `all`'s pipeline thread has a heap (and a limit, apps/pipeline/pipeline-thread.ts) of its own.
  const thread = processWide ? 'api' : 'pipeline';
  new Gauge({
    name: `${METRICS_PREFIX}thread_heap_bytes`,
    help: "Each thread's V8 heap: used, total (what the heap holds from the system), limit",
    labelNames: ['thread', 'measure'] as const,
    registers,
    collect() {
      const heap = v8.getHeapStatistics();
      this.set({ thread, measure: 'used' }, heap.used_heap_size);
      this.set({ thread, measure: 'total' }, heap.total_heap_size);
      this.set({ thread, measure: 'limit' }, heap.heap_size_limit);
    },
  });

  const rateLimitRejections = new Counter({
    name: `${METRICS_PREFIX}rate_limit_rejections_total`,
    help: 'Requests answered 429',
    labelNames: ['kind'] as const,
    registers,
  });
  for (const kind of RATE_LIMIT_KINDS) rateLimitRejections.inc({ kind }, 0);

  return {
    registry,
    httpRequestDuration: createRequestDurations({
      name: `${METRICS_PREFIX}http_request_duration_seconds`,
      help: 'Duration of answered HTTP requests',
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    messagesAccepted: perMessenger('messages_accepted_total', 'Messages accepted by send (appended to the event store)'),
    messagesDelivered: perMessenger('messages_delivered_total', 'Messages delivered to the messenger'),
    messagesFailed: perMessenger('messages_failed_total', 'Delivery attempts that failed'),
    messagesAbandoned: perMessenger('messages_abandoned_total', 'Messages given up on (permanent failure or attempts exhausted)'),
    pollRequests: new Counter({ name: `${METRICS_PREFIX}poll_requests_total`, help: 'Polls answered 200', registers }),
    pollPopped: new Counter({ name: `${METRICS_PREFIX}poll_popped_total`, help: 'Messages returned by poll', registers }),
    rateLimitRejections,
    bodiesForgotten: (() => {
      const counter = new Counter({ name: `${METRICS_PREFIX}bodies_forgotten_total`, help: 'Data keys destroyed: the message bodies and contact ids they sealed can no longer be read', labelNames: ['reason'] as const, registers });
      for (const reason of ['finished', 'retention', 'app deleted']) counter.inc({ reason }, 0);
      return counter;
    })(),
    pollForgotten: new Counter({ name: `${METRICS_PREFIX}poll_forgotten_total`, help: 'Inbound messages found by a poll after their body was forgotten (retention passed before anyone polled)', registers }),
    webhookAttempts: (() => {
      const counter = new Counter({ name: `${METRICS_PREFIX}webhook_attempts_total`, help: 'Webhook deliveries tried, by outcome (delivered, failed)', labelNames: ['outcome'] as const, registers });
      for (const outcome of ['delivered', 'failed']) counter.inc({ outcome }, 0);
      return counter;
    })(),
    webhookFailures: (() => {
      const counter = new Counter({ name: `${METRICS_PREFIX}webhook_failures_total`, help: 'Failed webhook attempts, by kind (status, timeout, unreachable, refused, request)', labelNames: ['kind'] as const, registers });
      for (const kind of ['status', 'timeout', 'unreachable', 'refused', 'request']) counter.inc({ kind }, 0);
      return counter;
    })(),
    webhooksAbandoned: new Counter({ name: `${METRICS_PREFIX}webhooks_abandoned_total`, help: 'Inbound messages given up on after every webhook attempt failed', registers }),
    sessionInboundSkipped: new Counter({
      name: `${METRICS_PREFIX}session_inbound_skipped_total`,
      help: 'Inbound Session messages not handed to the app, by kind (typing, read-receipt, attachment, voice-note, reaction, call, group-invite, undecodable, …)',
      labelNames: ['kind'] as const,
      registers,
    }),
    rolesHeld: new Gauge({ name: `${METRICS_PREFIX}role_held`, help: 'Leased roles of the pipeline: 1 where this process runs the role, 0 where another process may', labelNames: ['group', 'role'] as const, registers }),
  };
};
