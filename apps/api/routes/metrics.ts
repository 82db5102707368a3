import type { FastifyPluginAsync } from 'fastify';
import type { RelayMetrics } from '../../shared/metrics.ts';

/**
 * `GET /metrics`: the process's metrics in the Prometheus text format, for a scraper on the
 * operator's network. No authentication, no rate limit, not in the OpenAPI document.
 */
export const metricsRoute =
  (metrics: RelayMetrics): FastifyPluginAsync =>
  async (app) => {
    app.get('/metrics', { schema: { hide: true } }, async (_request, reply) => {
      const text = await metrics.registry.metrics();
      return reply.code(200).header('content-type', metrics.registry.contentType).send(text);
    });
  };
