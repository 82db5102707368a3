import type { FastifyInstance } from 'fastify';
import path from 'node:path';
import type { Logger } from 'pino';
import { defaultDeliveryPolicy } from '../domain/outbound/delivery.ts';
import type { Consumer } from '../infra/broker/port.ts';
import { createSecretBox } from '../infra/crypto/secret-box.ts';
import { resolveSecretKey } from '../infra/crypto/secret-key-file.ts';
import { createReadModels } from '../projections/read-models.ts';
import { startDeliveryWorker } from './delivery/delivery-worker.ts';
import { startEventTopicsPublisher } from './delivery/event-topics.ts';
import { startPublisher } from './delivery/publisher.ts';
import { startProvisioner } from './gateway/provisioner.ts';
import { receiveInbound } from './gateway/receive-inbound.ts';
import type { CheckpointedSubscription } from './shared/checkpointed-subscription.ts';
import type { Config } from './shared/config.ts';
import { openConnectors, type Connectors } from './shared/connectors.ts';
import type { RelayContext } from './shared/context.ts';
import type { HttpParts } from './http-parts.ts';
import { createLogger } from './shared/logger.ts';
import { createMetrics, type MetricsSnapshot } from './shared/metrics.ts';
import { startPipelineThread } from './pipeline/pipeline-thread.ts';
import { openBroker, openEventStore } from './shared/open-stores.ts';
import { startProjectionRunner } from './shared/projection-runner.ts';
import { VERSION } from './shared/version.ts';

export const ROLES = ['all', 'api', 'account', 'delivery', 'gateway'] as const;
export type Role = (typeof ROLES)[number];

/** Where the read models of the configured store are checkpointed (one file per kind of store). */
export const readModelsSnapshotFile = (config: Config): string => path.join(config.dataDir, `read-models.${config.EVENT_STORE}.json`);

/** Opens the stores, builds the read models from the history, and returns what every role shares. */
export const openContext = async (
  config: Config,
  log: Logger = createLogger(config.LOG_LEVEL),
  options: { processMetrics?: boolean } = {},
): Promise<RelayContext> => {
  const store = await openEventStore(config);
  const broker = await openBroker(config, store, log).catch(async (error: unknown) => {
    await store.close().catch(() => undefined);
    throw error;
  });
  const models = createReadModels();
  const projections = await startProjectionRunner(store, models.all, log.child({ component: 'projections' }), {
    file: readModelsSnapshotFile(config),
    everyMs: 30_000,
  });
  const deliveryPolicy = {
    ...defaultDeliveryPolicy,
    maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
    baseDelayMs: config.DELIVERY_BACKOFF_BASE_MS,
    factor: config.DELIVERY_BACKOFF_FACTOR,
  };
  return {
    config,
    version: VERSION,
    log,
    store,
    broker,
    models,
    projections,
    secrets: createSecretBox(resolveSecretKey(config.RELAY_SECRET_KEY, config.dataDir)),
    deliveryPolicy,
    metrics: createMetrics({ store, broker, deliveryPolicy, processWide: options.processMetrics ?? true }),
  };
};

export const closeContext = async (ctx: RelayContext) => {
  await ctx.projections.stop();
  await ctx.broker.close();
  await ctx.store.close();
};

export interface RunningRelay {
  readonly ctx: RelayContext;
  /** The HTTP server, for roles that serve one. */
  readonly server: FastifyInstance | undefined;
  /** Stops accepting, finishes in-flight work, commits offsets, closes the stores. */
  close(): Promise<void>;
}

/** The parts of Relay one thread runs. */
export interface Parts {
  /** Which HTTP server it serves: the public API (with the dashboard and account API), the account API alone, its metrics alone, or none. */
  readonly http: 'api' | 'account' | 'metrics' | 'none';
  /** The publisher(s) and the delivery worker. */
  readonly delivery: boolean;
  /** The connectors' inbound side and the provisioner. */
  readonly gateway: boolean;
}

/** What each role runs. `all` runs the API here and delivery and gateway in a thread of their own (see startRelay). */
const PARTS: Record<Exclude<Role, 'all'>, Parts> = {
  api: { http: 'api', delivery: false, gateway: false },
  account: { http: 'account', delivery: false, gateway: false },
  delivery: { http: 'metrics', delivery: true, gateway: false },
  gateway: { http: 'metrics', delivery: false, gateway: true },
};

/**
 * Starts a role. `all` is the API in this thread and the delivery pipeline (publisher, delivery
 * worker, gateway, provisioner) in a worker thread of the same process: delivering then never
 * holds up accepting (each delivery commits several SQLite transactions, synchronously), and the
 * second core does the delivering. `/metrics` of the API shows both threads' counters.
 */
export const startRelay = async (config: Config, role: Role): Promise<RunningRelay> => {
  if (role !== 'all') return startParts(config, PARTS[role]);
  const log = createLogger(config.LOG_LEVEL);
  const pipeline = await startPipelineThread(config, log);
  let relay: RunningRelay;
  try {
    relay = await startParts(config, PARTS.api, { log, otherMetrics: () => pipeline.metrics() });
  } catch (error) {
    await pipeline.stop().catch(() => undefined);
    throw error;
  }
  let closing: Promise<void> | undefined;
  return {
    ctx: relay.ctx,
    server: relay.server,
    close: () =>
      (closing ??= (async () => {
        try {
          await relay.close();
        } finally {
          await pipeline.stop();
        }
      })()),
  };
};

export interface PartsOptions {
  readonly log?: Logger;
  /** Metrics of the other threads of this process, added to this one's at each scrape. */
  readonly otherMetrics?: () => Promise<MetricsSnapshot[]>;
}

/** Starts the given parts of Relay in this thread. */
export const startParts = async (config: Config, parts: Parts, options: PartsOptions = {}): Promise<RunningRelay> => {
  const ctx = await openContext(config, options.log, { processMetrics: parts.http !== 'none' });
  const subscriptions: CheckpointedSubscription[] = [];
  const consumers: Consumer[] = [];
  let connectors: Connectors | undefined;
  let http: HttpParts | undefined;

  try {
    if (parts.delivery || parts.gateway) connectors = openConnectors(config);
    if (parts.gateway) {
      subscriptions.push(await startProvisioner(ctx.store, connectors!.byMessenger, ctx.log));
      for (const connector of connectors!.byMessenger.values()) {
        await connector.listen(async (message) => {
          const result = await receiveInbound(ctx.store, ctx.models.apps, message);
          if (result.kind === 'unrouted') ctx.log.warn({ messenger: message.messenger, reason: result.reason }, 'inbound message not routed');
        });
      }
    }
    if (parts.delivery) {
      subscriptions.push(await startPublisher(ctx.store, ctx.broker, ctx.log));
      // Analytics consumers subscribe to Kafka's events.<category>; nobody outside reads the embedded log.
      if (config.BROKER === 'kafka') subscriptions.push(await startEventTopicsPublisher(ctx.store, ctx.broker, ctx.log));
      consumers.push(
        await startDeliveryWorker({
          store: ctx.store,
          broker: ctx.broker,
          apps: ctx.models.apps,
          connectors: connectors!.byMessenger,
          policy: ctx.deliveryPolicy,
          metrics: ctx.metrics,
          log: ctx.log.child({ component: 'delivery' }),
        }),
      );
    }
    if (parts.http !== 'none') {
      const { startHttp } = await import('./http-parts.ts');
      http = await startHttp(ctx, parts.http, options.otherMetrics);
    }
  } catch (error) {
    await ctx.log.flush?.();
    await connectors?.close().catch(() => undefined);
    await closeContext(ctx).catch(() => undefined);
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    ctx,
    server: http?.server,
    close: () =>
      (closing ??= (async () => {
        await http?.close();
        for (const consumer of consumers) await consumer.stop();
        for (const subscription of subscriptions) await subscription.stop();
        await connectors?.close();
        await closeContext(ctx);
      })()),
  };
};
