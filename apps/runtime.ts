import Fastify, { type FastifyInstance } from 'fastify';
import { metricsRoute } from './api/routes/metrics.ts';
import path from 'node:path';
import { defaultDeliveryPolicy } from '../domain/outbound/delivery.ts';
import type { Consumer } from '../infra/broker/port.ts';
import { createSecretBox } from '../infra/crypto/secret-box.ts';
import { resolveSecretKey } from '../infra/crypto/secret-key-file.ts';
import { createReadModels } from '../projections/read-models.ts';
import { buildAccountApp } from './account/app.ts';
import { RateLimiter } from './api/rate-limiter.ts';
import { startDeliveryWorker } from './delivery/delivery-worker.ts';
import { startEventTopicsPublisher } from './delivery/event-topics.ts';
import { startPublisher } from './delivery/publisher.ts';
import { httpForwarder, inProcessForwarder } from './dashboard/forwarder.ts';
import { startProvisioner } from './gateway/provisioner.ts';
import { receiveInbound } from './gateway/receive-inbound.ts';
import { buildServer } from './server.ts';
import type { CheckpointedSubscription } from './shared/checkpointed-subscription.ts';
import type { Config } from './shared/config.ts';
import { openConnectors, type Connectors } from './shared/connectors.ts';
import type { RelayContext } from './shared/context.ts';
import { createLogger } from './shared/logger.ts';
import { createMetrics } from './shared/metrics.ts';
import { openBroker, openEventStore } from './shared/open-stores.ts';
import { startProjectionRunner } from './shared/projection-runner.ts';
import { VERSION } from './shared/version.ts';

export const ROLES = ['all', 'api', 'account', 'delivery', 'gateway'] as const;
export type Role = (typeof ROLES)[number];

/** Where the read models of the configured store are checkpointed (one file per kind of store). */
export const readModelsSnapshotFile = (config: Config): string => path.join(config.dataDir, `read-models.${config.EVENT_STORE}.json`);

/** Opens the stores, builds the read models from the history, and returns what every role shares. */
export const openContext = async (config: Config, log = createLogger(config.LOG_LEVEL)): Promise<RelayContext> => {
  const store = openEventStore(config);
  const broker = openBroker(config, store, log);
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
    metrics: createMetrics({ store, broker, deliveryPolicy }),
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

/** Starts the components of a role in one process; `all` runs every one of them. */
export const startRelay = async (config: Config, role: Role): Promise<RunningRelay> => {
  const ctx = await openContext(config);
  const has = (r: Role) => role === 'all' || role === r;
  const subscriptions: CheckpointedSubscription[] = [];
  const consumers: Consumer[] = [];
  let connectors: Connectors | undefined;
  let limiter: RateLimiter | undefined;
  let server: FastifyInstance | undefined;
  let account: FastifyInstance | undefined;

  try {
    if (has('delivery') || has('gateway')) connectors = openConnectors(config);
    if (has('gateway')) {
      subscriptions.push(await startProvisioner(ctx.store, connectors!.byMessenger, ctx.log));
      for (const connector of connectors!.byMessenger.values()) {
        await connector.listen(async (message) => {
          const result = await receiveInbound(ctx.store, ctx.models.apps, message);
          if (result.kind === 'unrouted') ctx.log.warn({ messenger: message.messenger, reason: result.reason }, 'inbound message not routed');
        });
      }
    }
    if (has('delivery')) {
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
    if (has('api') || role === 'account') account = await buildAccountApp(ctx);
    if (has('api')) {
      limiter = new RateLimiter(config.RATE_LIMIT_WINDOW_MS, config.RATE_LIMIT_EVICT_INTERVAL_MS);
      const forwardToAccount = config.DASHBOARD_BACKEND_URL ? httpForwarder(config.DASHBOARD_BACKEND_URL) : inProcessForwarder(account!);
      server = await buildServer(ctx, { limiter, forwardToAccount, accountDocs: () => account!.swagger() });
    } else if (role === 'account') {
      server = account;
    } else {
      // The delivery and gateway roles serve only their metrics, for the operator's scraper.
      server = Fastify({ logger: false });
      await server.register(metricsRoute(ctx.metrics));
    }
    if (server) await server.listen({ port: config.PORT, host: config.HOST });
  } catch (error) {
    await ctx.log.flush?.();
    await closeContext(ctx).catch(() => undefined);
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    ctx,
    server,
    close: () =>
      (closing ??= (async () => {
        await server?.close();
        if (account !== server) await account?.close();
        limiter?.close();
        for (const consumer of consumers) await consumer.stop();
        for (const subscription of subscriptions) await subscription.stop();
        await connectors?.close();
        await closeContext(ctx);
      })()),
  };
};
