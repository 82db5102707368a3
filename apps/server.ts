import Fastify, { type FastifyInstance } from 'fastify';
import http from 'node:http';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { publicApi } from './api/app.ts';
import type { RateLimiter } from './api/rate-limiter.ts';
import { metricsRoute } from './api/routes/metrics.ts';
import { ACCOUNT_PREFIX } from './account/app.ts';
import type { Forwarder } from './dashboard/forwarder.ts';
import { dashboardProxy } from './dashboard/proxy.ts';
import { HttpRequestLog } from './http-request-log.ts';
import { registerApiDocs } from './docs.ts';
import type { RelayContext } from './shared/context.ts';
import type { MetricsSnapshot } from './shared/metrics.ts';
import { securityHeaders } from './shared/security-headers.ts';

/**
 * The HTTP face of Relay: the public API under `/api/v1`, the dashboard proxy under
 * `/dashboard/api/dashboard`, the OpenAPI documents under `/docs`, Prometheus metrics at
 * `/metrics`. Every answer carries the security headers; errors are `{ "error": string }` outside
 * the dashboard prefix.
 */
export const buildServer = async (
  ctx: RelayContext,
  options: { limiter: RateLimiter; forwardToAccount: Forwarder; accountDocs?: () => unknown; otherMetrics?: (() => Promise<MetricsSnapshot[]>) | undefined },
): Promise<FastifyInstance> => {
  const headerEntries = Object.entries(securityHeaders());
  const httpLog = ctx.log.child({ component: 'http' });
  const app = Fastify({
    // The security headers are set on every response before Fastify sees the request, so they are
    // also on the answers Fastify gives before routing (unroutable URL, closing): cheaper than an
    // onRequest hook, whose hook-runner pass cost about a tenth of the throughput of health and poll.
    serverFactory: (handler: http.RequestListener) =>
      http.createServer((request, response) => {
        for (const [name, value] of headerEntries) response.setHeader(name, value);
        handler(request, response);
      }),
    loggerInstance: httpLog,
    // request.log is the server's logger itself (a child per request costs a sixth of the
    // throughput of the cheapest routes); log lines that need the request carry its reqId.
    childLoggerFactory: (logger) => logger,
    // One line per answered request instead of Fastify's two, and its duration in the histogram.
    logController: new HttpRequestLog(httpLog, ctx.metrics.httpRequestDuration),
    bodyLimit: 2 * 1024 * 1024,
    forceCloseConnections: false,
    return503OnClosing: true,
    // A URL the router cannot even decode (broken percent-encoding) is answered in the shape of
    // the area it was aimed at: 404 under the dashboard prefix (off the allowlist), else 400.
    frameworkErrors: (error, request, reply) => {
      const raw = reply as unknown as { code(status: number): { send(body: unknown): unknown } };
      request.log.debug({ err: error }, 'unroutable request');
      if (request.url.startsWith(ACCOUNT_PREFIX)) return void raw.code(404).send({ success: false, error: 'Not found' });
      return void raw.code(400).send({ error: 'Bad request' });
    },
  }).withTypeProvider<ZodTypeProvider>();
  app.setValidatorCompiler(validatorCompiler);
  // Responses are built by the handlers in the documented shapes; the zod schemas document them.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.setErrorHandler((error, request, reply) => {
    const err = error as { statusCode?: number; code?: string; name?: string };
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return reply.code(400).send({ error: 'Content-Type must be application/json' });
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return reply.code(413).send({ error: 'Request body too large' });
    if (err.statusCode !== undefined && err.statusCode >= 400 && err.statusCode < 500) return reply.code(400).send({ error: 'Invalid JSON' });
    if (err.name === 'EventStoreUnavailableError' || err.name === 'BrokerUnavailableError') {
      request.log.error({ err: error }, 'backend unavailable');
      return reply.code(503).send({ error: 'Service temporarily unavailable' });
    }
    request.log.error({ err: error }, 'request failed');
    return reply.code(500).send({ error: 'Internal server error' });
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));

  await registerApiDocs(app as unknown as FastifyInstance, ctx.version, options.accountDocs);
  await app.register(metricsRoute(ctx.metrics, options.otherMetrics));
  await app.register(publicApi(ctx, options.limiter), { prefix: '/api/v1' });
  await app.register(dashboardProxy({ forward: options.forwardToAccount, timeoutMs: ctx.config.DASHBOARD_TIMEOUT_MS }), {
    prefix: ACCOUNT_PREFIX,
  });
  return app as unknown as FastifyInstance;
};
