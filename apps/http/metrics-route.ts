import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import { mergedMetricsText, type MetricsSnapshot, type RelayMetrics } from '../services/metrics.ts';

export const METRICS_UNAUTHORIZED = 'A metrics token is required (Authorization: Bearer <METRICS_TOKEN>)';

/** Whether the request's Authorization header carries the token (compared in constant time). */
const carries = (header: string | undefined, token: string): boolean => {
  const given = Buffer.from(header ?? '', 'utf8');
  const wanted = Buffer.from(`Bearer ${token}`, 'utf8');
  return given.length === wanted.length && timingSafeEqual(given, wanted);
};

/**
 * `GET /metrics`: the process's metrics in the Prometheus text format, for a scraper on the
 * operator's network: memory, per-route request counts, consumer lag. With METRICS_TOKEN set it
 * answers only `Authorization: Bearer <token>` (401 otherwise); METRICS_PORT puts it on a listener
 * of its own (start-http.ts). No rate limit, not in the OpenAPI document. `otherMetrics` gives the
 * counters of the process's other threads (the delivery pipeline of role `all`), added to this
 * thread's.
 */
export const metricsRoute =
  (metrics: RelayMetrics, options: { otherMetrics?: (() => Promise<MetricsSnapshot[]>) | undefined; token?: string | undefined } = {}): FastifyPluginAsync =>
  async (app) => {
    const { otherMetrics, token } = options;
    app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
      if (token !== undefined && !carries(request.headers.authorization, token)) {
        return reply.code(401).header('www-authenticate', 'Bearer realm="metrics"').send({ error: METRICS_UNAUTHORIZED });
      }
      const text = await mergedMetricsText(metrics.registry, otherMetrics ? await otherMetrics() : []);
      return reply.code(200).header('content-type', metrics.registry.contentType).send(text);
    });
  };
