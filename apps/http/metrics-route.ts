import type { FastifyPluginAsync } from 'fastify';
import { mergedMetricsText, type MetricsSnapshot, type RelayMetrics } from '../boot/metrics.ts';

/**
 * `GET /metrics`: the process's metrics in the Prometheus text format, for a scraper on the
 * operator's network. No authentication, no rate limit, not in the OpenAPI document.
 * `otherMetrics` gives the counters of the process's other threads (the delivery pipeline of
 * role `all`), added to this thread's.
 */
export const metricsRoute =
  (metrics: RelayMetrics, otherMetrics?: () => Promise<MetricsSnapshot[]>): FastifyPluginAsync =>
  async (app) => {
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const text = await mergedMetricsText(metrics.registry, otherMetrics ? await otherMetrics() : []);
      return reply.code(200).header('content-type', metrics.registry.contentType).send(text);
    });
  };
