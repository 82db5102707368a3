import Fastify, { type FastifyInstance } from 'fastify';
import { buildAccountApp } from '../account/app.ts';
import type { Limiter } from '../services/limiter.ts';
import { metricsRoute } from './metrics-route.ts';
import { httpForwarder, inProcessForwarder } from '../dashboard/forwarder.ts';
import { buildServer } from './server.ts';
import { startStatisticsModel, statisticsSnapshotFile, type StatisticsModel, type StatisticsSource } from '../read-models/statistics-model.ts';
import type { RelayContext } from '../services/context.ts';
import type { MetricsSnapshot } from '../services/metrics.ts';

/** An HTTP face of Relay, listening. */
export interface HttpParts {
  readonly server: FastifyInstance;
  close(): Promise<void>;
}

/**
 * Builds and starts the HTTP server of a thread: the public API (with the dashboard proxy and,
 * in-process unless DASHBOARD_BACKEND_URL says otherwise, the account API), the account API
 * alone, or only the metrics (delivery and gateway roles, for the operator's scraper). Loaded
 * only by threads that serve HTTP: the delivery pipeline's thread does without fastify.
 */
export const startHttp = async (
  ctx: RelayContext,
  kind: 'api' | 'account' | 'metrics',
  otherMetrics?: () => Promise<MetricsSnapshot[]>,
  /** Where the statistics pages read from; without one, the public API's server runs the model itself. */
  statisticsSource?: StatisticsSource,
): Promise<HttpParts> => {
  const { config } = ctx;
  let limiter: Limiter | undefined;
  let account: FastifyInstance | undefined;
  /** The statistics pages' own read model, when no source is given (a process of role `api`). */
  let statistics: StatisticsModel | undefined;
  let server: FastifyInstance;
  /** `/metrics` alone, on METRICS_PORT when set (for the API too), else on PORT (roles delivery and gateway). */
  let metricsServer: FastifyInstance | undefined;
  if (kind === 'metrics' || config.METRICS_PORT !== undefined) {
    metricsServer = Fastify({ logger: false });
    await metricsServer.register(metricsRoute(ctx.metrics, { otherMetrics: kind === 'metrics' ? undefined : otherMetrics, token: config.METRICS_TOKEN }));
  }
  if (kind === 'metrics') {
    server = metricsServer!;
  } else {
    account = await buildAccountApp(ctx);
    if (kind === 'account') server = account;
    else {
      limiter = ctx.limits.limiter(config.RATE_LIMIT_WINDOW_MS, config.RATE_LIMIT_EVICT_INTERVAL_MS);
      const forwardToAccount = config.DASHBOARD_BACKEND_URL ? httpForwarder(config.DASHBOARD_BACKEND_URL) : inProcessForwarder(account);
      if (!statisticsSource) statistics = await startStatisticsModel(ctx.store, ctx.log.child({ component: 'statistics' }), statisticsSnapshotFile(config));
      server = await buildServer(ctx, { limiter, forwardToAccount, accountDocs: () => account!.swagger(), otherMetrics, statistics: statisticsSource ?? statistics!.source });
    }
  }
  const close = async () => {
    await server.close();
    if (metricsServer !== undefined && metricsServer !== server) await metricsServer.close();
    if (account !== undefined && account !== server) await account.close();
    limiter?.close();
    await statistics?.stop();
  };
  try {
    if (kind === 'metrics' && config.METRICS_PORT !== undefined) await server.listen({ port: config.METRICS_PORT, host: config.METRICS_HOST });
    else await server.listen({ port: config.PORT, host: config.HOST });
    if (metricsServer !== undefined && metricsServer !== server) await metricsServer.listen({ port: config.METRICS_PORT!, host: config.METRICS_HOST });
  } catch (error) {
    await close().catch(() => undefined);
    throw error;
  }
  return { server, close };
};
