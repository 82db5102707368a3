import type { FastifyInstance } from 'fastify';
import path from 'node:path';
import { setImmediate } from 'node:timers/promises';
import type { Logger } from 'pino';
import { defaultDeliveryPolicy } from '../../domain/delivery/policy.ts';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createKeyedHash } from '../../infra/crypto/keyed-hash.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import { checkedSecretKey } from './secret-key-check.ts';
import { announceFirstSignIn } from './first-sign-in.ts';
import { createReadModels } from '../../projections/read-models.ts';
import { startDeliveryWorker } from '../pipeline/delivery-worker.ts';
import { inboundDepsOf, receiveInbound } from '../pipeline/inbound-receiver.ts';
import { newCodeAttemptLimiter } from '../pipeline/code-commands.ts';
import type { Limiter } from '../services/limiter.ts';
import { createBodyOpener } from '../pipeline/sealed-bodies.ts';
import { messageRetentionMs, type Config } from '../services/config.ts';
import { SealingWindows } from '../services/sealing-windows.ts';
import { openConnectors, type Connectors } from './connectors.ts';
import { DELIVERY_ROLES, deliveryRoles, GATEWAY_ROLES, gatewayRoles } from './pipeline-roles.ts';
import { runLeasedRoles, type Stoppable } from '../pipeline/leased-roles.ts';
import { runWhileStoreAnswers, type YieldableWork } from '../pipeline/store-away.ts';
import type { AttemptOutcome } from '../../domain/delivery/commands.ts';
import type { GroupAdministrator } from '../pipeline/group-administrator.ts';
import type { RelayContext } from '../services/context.ts';
import type { HttpParts } from '../http/start-http.ts';
import { createLogger } from '../services/logger.ts';
import { createMetrics, type MetricsSnapshot } from '../services/metrics.ts';
import { startPipelineThread, type PipelineThread } from '../pipeline/pipeline-thread.ts';
import { remoteStatistics } from '../read-models/remote-statistics.ts';
import type { StatisticsSource } from '../read-models/statistics-model.ts';
import { Readiness } from '../services/readiness.ts';
import { openBroker, openEventStore, type SqlitePolling } from './stores.ts';
import { startProjectionRunner } from '../read-models/runner.ts';
import { VERSION } from '../services/version.ts';
import { openLimits } from '../limits/open-limits.ts';

export const ROLES = ['all', 'api', 'account', 'delivery', 'gateway'] as const;

/** One data key per app and second, for at most 10,000 messages (docs/privacy.md). */
const SEALING_WINDOW_MS = 1000;
const SEALING_WINDOW_MAX_USES = 10_000;
export type Role = (typeof ROLES)[number];

/** Where the read models of the configured store are checkpointed (one file per kind of store). */
export const readModelsSnapshotFile = (config: Config): string => path.join(config.dataDir, `read-models.${config.EVENT_STORE}.json`);

/** Opens the stores, builds the read models from the history, and returns what every role shares. */
export const openContext = async (
  config: Config,
  log: Logger = createLogger(config.LOG_LEVEL),
  options: {
    processMetrics?: boolean;
    brokerMaintenance?: boolean;
    storePolling?: SqlitePolling;
    /** `pipeline`: without the credentials, restored from the snapshot another thread of the process writes (role `all`'s pipeline thread). */
    readModels?: 'all' | 'pipeline';
    /** Told once the stores are open (created, with the secret key, on a first start), before the read models are restored and caught up. */
    onStoresOpen?: () => void;
  } = {},
): Promise<RelayContext> => {
  // The embedded store's checkpoints are left to the thread that delivers (the broker's too).
  const store = await openEventStore(config, { checkpoints: options.brokerMaintenance ?? false, ...(options.storePolling === undefined ? {} : { polling: options.storePolling }) });
  const broker = await openBroker(config, store, log, { maintenance: options.brokerMaintenance ?? false }).catch(async (error: unknown) => {
    await store.close().catch(() => undefined);
    throw error;
  });
  const pipelineModels = options.readModels === 'pipeline';
  const models = createReadModels({ credentials: !pipelineModels });
  const secretKey = await checkedSecretKey(store, config.RELAY_SECRET_KEY, config.dataDir).catch(async (error: unknown) => {
    await broker.close().catch(() => undefined);
    await store.close().catch(() => undefined);
    throw error;
  });
  const secrets = createSecretBox(secretKey);
  const keyedHash = createKeyedHash(secretKey);
  const sealer = createMessageSealer(secrets);
  if (options.onStoresOpen) {
    options.onStoresOpen();
    // What it set off (role `all`: the message that starts the pipeline thread) goes before the
    // restore below, which reads and parses its snapshot without yielding: at 10,000 users the
    // pipeline thread otherwise heard of it 1.2 s late, and restored after this thread instead
    // of beside it (issue 49, session 40).
    await setImmediate();
  }
  const projections = await startProjectionRunner(store, models.all, log.child({ component: 'projections' }), {
    file: readModelsSnapshotFile(config),
    everyMs: 30_000,
    save: !pipelineModels,
  });
  const deliveryPolicy = {
    ...defaultDeliveryPolicy,
    maxAttempts: config.DELIVERY_MAX_ATTEMPTS,
    baseDelayMs: config.DELIVERY_BACKOFF_BASE_MS,
    factor: config.DELIVERY_BACKOFF_FACTOR,
    // At most the retention: a body is forgotten then anyway.
    identityWaitMs: Math.min(config.DELIVERY_IDENTITY_WAIT_MINUTES * 60_000, messageRetentionMs(config)),
  };
  return {
    config,
    version: VERSION,
    log,
    store,
    broker,
    models,
    projections,
    secrets,
    keyedHash,
    sealer,
    sealing: new SealingWindows(sealer, store.keys, { windowMs: SEALING_WINDOW_MS, maxUses: SEALING_WINDOW_MAX_USES, retentionMs: messageRetentionMs(config) }, log.child({ component: 'sealing' })),
    deliveryPolicy,
    metrics: createMetrics({ store, broker, deliveryPolicy, apps: models.apps, processWide: options.processMetrics ?? true }),
    readiness: new Readiness(),
    limits: await openLimits(config, log, keyedHash),
  };
};

export const closeContext = async (ctx: RelayContext) => {
  await ctx.limits.close();
  await ctx.sealing.close();
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
  let pipeline: PipelineThread | undefined;
  // The pipeline thread is made first and loads its code (most of a start-up's time) while this
  // thread loads and builds the API; it opens its stores once this thread has opened them (a
  // first start creates them, and the secret key), and both threads restore their read models at
  // once. The API listens as soon as it can (health
  // answers 503 until the pipeline runs: on Kafka its consumer groups may take seconds to join
  // after a crash). The dashboard's statistics model lives in the pipeline thread (off the
  // thread that accepts sends).
  let storesOpened!: () => void;
  let apiFailed!: (error: unknown) => void;
  const startWhen = new Promise<void>((resolve, reject) => {
    storesOpened = resolve;
    apiFailed = reject;
  });
  const pipelineStarting = startPipelineThread(config, log, { startWhen });
  // Awaited below; until then its failure must not count as unhandled.
  pipelineStarting.catch(() => undefined);
  const statistics = remoteStatistics(() => pipeline?.statistics);
  let relay: RunningRelay;
  try {
    relay = await startParts(config, PARTS.api, {
      log,
      otherMetrics: async () => (pipeline ? pipeline.metrics() : []),
      waitFor: ['delivery pipeline'],
      statistics,
      onStoresOpen: storesOpened,
      // The pipeline thread polls for other processes' commits and tells this one (stores.ts).
      storePolling: 'told',
    });
  } catch (error) {
    // Not told to start yet: it ends; already starting (the API failed later, say to listen): it is stopped.
    apiFailed(error);
    await pipelineStarting.then(
      (started) => started.stop(),
      () => undefined,
    );
    throw error;
  }
  try {
    pipeline = await pipelineStarting;
    pipeline.onStatisticsChanged(statistics.changed);
  } catch (error) {
    await relay.close().catch(() => undefined);
    throw error;
  }
  relay.ctx.readiness.started('delivery pipeline');
  const started = pipeline;
  let closing: Promise<void> | undefined;
  return {
    ctx: relay.ctx,
    server: relay.server,
    close: () =>
      (closing ??= (async () => {
        try {
          await relay.close();
        } finally {
          await started.stop();
        }
      })()),
  };
};

export interface PartsOptions {
  readonly log?: Logger;
  /** Metrics of the other threads of this process, added to this one's at each scrape. */
  readonly otherMetrics?: () => Promise<MetricsSnapshot[]>;
  /** Parts started elsewhere that health waits for (it answers 503 until they run). */
  readonly waitFor?: readonly string[];
  /** Where the dashboard's statistics pages read from (role `all`: the pipeline thread); else a model of this thread's own. */
  readonly statistics?: StatisticsSource;
  /**
   * Told once the stores are open (and created, with the secret key, on a first start), before this
   * thread restores its read models: role `all`'s pipeline thread restores its own meanwhile, on the
   * other core (at 10,000 users each thread reads and parses tens of MB of snapshot).
   */
  readonly onStoresOpen?: () => void;
  /** How this thread's embedded store learns of other processes' commits (stores.ts; default its own poll). */
  readonly storePolling?: SqlitePolling;
  /** Which read models it keeps (openContext): `pipeline` in role `all`'s pipeline thread. */
  readonly readModels?: 'all' | 'pipeline';
}

/** Sets `relay_role_held` for the roles of a group, 1 for those running here. */
const rolesGauge =
  (ctx: RelayContext, group: string, roles: readonly string[]) =>
  (running: readonly string[]): void => {
    for (const role of roles) ctx.metrics.rolesHeld.set({ group, role }, running.includes(role) ? 1 : 0);
  };

/** Starts the given parts of Relay in this thread. */
export const startParts = async (config: Config, parts: Parts, options: PartsOptions = {}): Promise<RunningRelay> => {
  const ctx = await openContext(config, options.log, {
    processMetrics: parts.http !== 'none',
    brokerMaintenance: parts.delivery,
    ...(options.storePolling === undefined ? {} : { storePolling: options.storePolling }),
    ...(options.readModels === undefined ? {} : { readModels: options.readModels }),
    ...(options.onStoresOpen === undefined ? {} : { onStoresOpen: options.onStoresOpen }),
  });
  for (const part of options.waitFor ?? []) ctx.readiness.waitFor(part);
  const consumers: Stoppable[] = [];
  let connectors: Connectors | undefined;
  let codeAttempts: Limiter | undefined;
  let http: HttpParts | undefined;

  try {
    if (parts.delivery || parts.gateway) connectors = openConnectors(config, ctx.log, { store: ctx.store, secrets: ctx.secrets, metrics: ctx.metrics });
    // The shares of the deployment's work this instance holds: given to the others while a shared store does not answer.
    const works: YieldableWork[] = [];
    if (parts.gateway) {
      // Every gateway listens (a message is recorded once, by its messenger's id); the group
      // administrator runs where its lease is, and hears the daemons' group events there.
      const groups: { current: GroupAdministrator | undefined } = { current: undefined };
      works.push({ name: 'gateway roles', start: () => runLeasedRoles(ctx.broker, 'gateway', gatewayRoles(ctx, connectors!, groups), ctx.log.child({ component: 'roles' }), rolesGauge(ctx, 'gateway', GATEWAY_ROLES)) });
      codeAttempts = newCodeAttemptLimiter(ctx.limits);
      const inbound = inboundDepsOf(ctx, codeAttempts);
      for (const connector of connectors!.byMessenger.values()) {
        await connector.listen(
          async (message) => {
            const result = await receiveInbound(inbound, message);
            if (result.kind === 'unrouted') ctx.log.warn({ messenger: message.messenger, reason: result.reason }, 'inbound message not routed');
            else if (result.code.kind !== 'none') ctx.log.info({ messenger: message.messenger, messageId: result.messageId, code: result.code }, 'code command');
          },
          (activity) => groups.current?.groupActivity(activity),
        );
      }
    }
    if (parts.delivery) {
      const bodies = createBodyOpener(ctx.store, ctx.sealer);
      // Kept across the worker's restarts: its partitions are not given up while it holds any.
      const unrecorded = new Map<string, AttemptOutcome>();
      works.push({
        name: 'deliveries',
        start: () =>
          startDeliveryWorker({
            store: ctx.store,
            broker: ctx.broker,
            apps: ctx.models.apps,
            connectors: connectors!.byMessenger,
            bodies,
            policy: ctx.deliveryPolicy,
            metrics: ctx.metrics,
            log: ctx.log.child({ component: 'delivery' }),
            unrecorded,
          }),
        mayYield: () => unrecorded.size === 0,
      });
      works.push({ name: 'delivery roles', start: () => runLeasedRoles(ctx.broker, 'delivery', deliveryRoles(ctx, bodies), ctx.log.child({ component: 'roles' }), rolesGauge(ctx, 'delivery', DELIVERY_ROLES)) });
    }
    if (works.length > 0) {
      if (config.EVENT_STORE === 'sqlite' || config.STORE_AWAY_YIELD_MS === 0) for (const work of works) consumers.push(await work.start());
      else consumers.push(await runWhileStoreAnswers({ ping: () => ctx.store.ping(), log: ctx.log.child({ component: 'store-away' }), awayAfterMs: config.STORE_AWAY_YIELD_MS }, works));
    }
    if (parts.http !== 'none') {
      const { startHttp } = await import('../http/start-http.ts');
      http = await startHttp(ctx, parts.http, options.otherMetrics, options.statistics);
      if (parts.http === 'api' || parts.http === 'account') await announceFirstSignIn(ctx);
    }
  } catch (error) {
    await ctx.log.flush?.();
    for (const consumer of consumers) await consumer.stop().catch(() => undefined);
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
        codeAttempts?.close();
        await connectors?.close();
        await closeContext(ctx);
      })()),
  };
};
