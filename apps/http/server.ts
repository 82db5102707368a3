import Fastify, { type FastifyInstance } from 'fastify';
import http from 'node:http';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { publicApi } from '../api/app.ts';
import type { Limiter } from '../services/limiter.ts';
import { metricsRoute } from './metrics-route.ts';
import { ACCOUNT_PREFIX, AUTH_PREFIX, GROUP_PREFIX } from '../account/app.ts';
import { AUTH_ROUTES, GROUP_ROUTES, routeMatcher } from '../dashboard/allowlist.ts';
import type { Forwarder } from '../dashboard/forwarder.ts';
import { dashboardProxy } from '../dashboard/proxy.ts';
import { fastifyLogOptions, loggedResponse, stampingErrorHandler, stampRoutes } from './request-log.ts';
import { dashboardPages } from './dashboard-pages.ts';
import { statisticsPages } from './statistics-pages.ts';
import { signalLinkRoutes } from './signal-link-route.ts';
import { appActivityRoutes } from './app-activity-routes.ts';
import { testMessageRoute } from './test-message-route.ts';
import { credentialRoutes } from './credential-routes.ts';
import type { StatisticsSource } from '../read-models/statistics-model.ts';
import { registerApiDocs } from './docs.ts';
import type { RelayContext } from '../services/context.ts';
import type { MetricsSnapshot } from '../services/metrics.ts';
import { responseWithHeaders, securityHeaders } from './security-headers.ts';
import { connectionGuard } from './connections.ts';
import { relayErrorHandler } from './error-handler.ts';
import { boundJsonBodies } from './bounded-json.ts';
import { coalescedWrites } from './coalesced-writes.ts';
import { trustProxyOption } from '../services/trust-proxy.ts';

/**
 * The HTTP face of Relay: the public API under `/api/v1`, the dashboard proxy under
 * `/dashboard/api/dashboard`, the OpenAPI documents under `/docs`, Prometheus metrics at
 * `/metrics`. Every answer carries the security headers; errors are `{ "error": string }` outside
 * the dashboard prefix.
 */
export const buildServer = async (
  ctx: RelayContext,
  options: {
    limiter: Limiter;
    forwardToAccount: Forwarder;
    accountDocs?: () => unknown;
    otherMetrics?: (() => Promise<MetricsSnapshot[]>) | undefined;
    /** The statistics pages' read model (the dashboard's statistics are served where it is given). */
    statistics?: StatisticsSource;
  },
): Promise<FastifyInstance> => {
  const headerEntries = Object.entries(securityHeaders());
  const httpLog = ctx.log.child({ component: 'http' });
  // Answers to what the HTTP parser rejects, and connections closed without resets (connections.ts).
  const guard = connectionGuard({ log: httpLog, headers: headerEntries, dashboardPrefixes: [ACCOUNT_PREFIX, AUTH_PREFIX, GROUP_PREFIX] });
  // Every response writes the security headers with its head (security-headers.ts), so they are
  // also on the answers Fastify gives before routing (unroutable URL, closing): cheaper than an
  // onRequest hook, whose hook-runner pass cost about a tenth of the throughput of health and poll.
  // And it records itself when it ends (request-log.ts): duration histogram and request log line.
  const Response = loggedResponse(responseWithHeaders(headerEntries), httpLog, ctx.metrics.httpRequestDuration);
  // Answers given at once leave together at the end of the event loop's turn (coalesced-writes.ts).
  const writes = coalescedWrites();
  const app = Fastify({
    serverFactory: (handler: http.RequestListener) => {
      // Node's own check of the Host header answers without body or security headers; the same
      // test is made here, answered in the area's shape.
      const server = http.createServer({ requireHostHeader: false, ServerResponse: Response }, (request, response) => {
        if (request.headers.host === undefined && request.httpVersionMajor === 1 && request.httpVersionMinor === 1) {
          return guard.answer(request, response, 400, 'Bad request');
        }
        writes.during(handler, request, response);
      });
      server.on('connection', writes.attach);
      guard.attach(server);
      return server;
    },
    clientErrorHandler: guard.clientError,
    // No logger of Fastify's own: the responses record themselves (request-log.ts).
    ...fastifyLogOptions(httpLog),
    bodyLimit: 2 * 1024 * 1024,
    forceCloseConnections: false,
    // Behind a reverse proxy that says who the client is and whether it came over HTTPS.
    trustProxy: trustProxyOption(ctx.config.TRUST_PROXY),
    return503OnClosing: true,
    // A URL the router cannot even decode (broken percent-encoding) is answered in the shape of
    // the area it was aimed at: 404 under the dashboard prefix (off the allowlist), else 400.
    frameworkErrors: (error, request, reply) => {
      const raw = reply as unknown as { code(status: number): { send(body: unknown): unknown } };
      httpLog.debug({ err: error, reqId: request.id }, 'unroutable request');
      if ([ACCOUNT_PREFIX, AUTH_PREFIX, GROUP_PREFIX].some((prefix) => request.url.startsWith(prefix))) return void raw.code(404).send({ success: false, error: 'Not found' });
      return void raw.code(400).send({ error: 'Bad request' });
    },
  }).withTypeProvider<ZodTypeProvider>();
  app.addHook('onRoute', stampRoutes);
  app.setValidatorCompiler(validatorCompiler);
  boundJsonBodies(app as unknown as FastifyInstance);
  // Responses are built by the handlers in the documented shapes; the zod schemas document them.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));

  app.setErrorHandler(stampingErrorHandler(relayErrorHandler({ area: 'public', failed: 'request failed', log: httpLog })));
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));

  await registerApiDocs(app as unknown as FastifyInstance, ctx.version, options.accountDocs);
  // /metrics here, unless it has a listener of its own (METRICS_PORT, start-http.ts).
  if (ctx.config.METRICS_PORT === undefined) await app.register(metricsRoute(ctx.metrics, { otherMetrics: options.otherMetrics, token: ctx.config.METRICS_TOKEN }));
  await app.register(dashboardPages(ctx));
  if (options.statistics) await app.register(statisticsPages(ctx, options.statistics));
  await app.register(signalLinkRoutes(ctx));
  await app.register(appActivityRoutes(ctx, options.statistics));
  await app.register(testMessageRoute(ctx, options.limiter));
  await app.register(credentialRoutes(ctx));
  await app.register(publicApi(ctx, options.limiter), { prefix: '/api/v1' });
  await app.register(
    dashboardProxy({ forward: options.forwardToAccount, timeoutMs: ctx.config.DASHBOARD_TIMEOUT_MS, match: routeMatcher(AUTH_ROUTES), passCookies: true, log: httpLog }),
    { prefix: AUTH_PREFIX },
  );
  await app.register(dashboardProxy({ forward: options.forwardToAccount, timeoutMs: ctx.config.DASHBOARD_TIMEOUT_MS, match: routeMatcher(GROUP_ROUTES), log: httpLog }), {
    prefix: GROUP_PREFIX,
  });
  await app.register(dashboardProxy({ forward: options.forwardToAccount, timeoutMs: ctx.config.DASHBOARD_TIMEOUT_MS, log: httpLog }), {
    prefix: ACCOUNT_PREFIX,
  });
  return app as unknown as FastifyInstance;
};
