import { ServerResponse, type IncomingMessage } from 'node:http';
import { LogController, type FastifyError, type FastifyReply, type FastifyRequest, type FastifyServerOptions, type RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import type { RelayMetrics } from '../boot/metrics.ts';

/** What a route stamps on its response for the record: the route's pattern and Fastify's request id. */
interface Stamped {
  route?: string;
  requestId?: string;
}

/**
 * What is recorded of each answered request: its duration in the request histogram, and one log
 * line when info is enabled, written when the answer is ended. It is done by the server's own
 * response, not by Fastify: with a logger of its own (or an onResponse hook) Fastify adds and
 * removes a `finish` and an `error` listener on every response and runs its log controller after
 * it, the per-request work issue 28 (item 5) asks to keep off the paths that do not need it. So
 * the server's Fastify has no logger (`request.log` is still Relay's, by `childLoggerFactory`),
 * and the routes stamp their pattern on the response (`stampRoutes`, `stampRoute`); an answer
 * given before any route (404, an unparseable URL, a request without Host) is `unmatched`.
 * Fastify's own "incoming request" and "request completed" lines are not written.
 */
export const loggedResponse = (
  base: new (request: IncomingMessage) => ServerResponse,
  log: Logger,
  durations: RelayMetrics['httpRequestDuration'],
): typeof ServerResponse =>
  class LoggedResponse extends (base as new (request: IncomingMessage) => ServerResponse & Stamped) {
    readonly #startedAt = performance.now();
    #recorded = false;

    override end(...args: unknown[]): this {
      const ended = (super.end as (...a: unknown[]) => this).apply(this, args);
      if (!this.#recorded) {
        this.#recorded = true;
        this.#record();
      }
      return ended;
    }

    #record(): void {
      const ms = performance.now() - this.#startedAt;
      const route = this.route ?? 'unmatched';
      const method = this.req.method ?? 'GET';
      durations.observe({ method, route, status_code: this.statusCode }, ms / 1000);
      if (log.isLevelEnabled('info')) {
        log.info({ reqId: this.requestId, method, route, status: this.statusCode, ms: Math.round(ms * 100) / 100 }, 'request');
      }
    }
  } as unknown as typeof ServerResponse;

/**
 * The logging options of a Fastify server whose responses record themselves: no logger of
 * Fastify's own (with one, Fastify adds listeners to every response to log it); `request.log` is
 * `log` itself (a child per request costs a sixth of the throughput of the cheapest routes: lines
 * that need the request carry its reqId); Fastify's "incoming request" line is not written.
 */
export const fastifyLogOptions = (log: Logger): Pick<FastifyServerOptions, 'childLoggerFactory' | 'logController'> => ({
  childLoggerFactory: () => log as never,
  logController: new LogController({ disableRequestLogging: true }),
});

/** Stamps what the record names on the response of a request (from its route, or where its route failed). */
export const stampRoute = (request: FastifyRequest, reply: FastifyReply, route = request.routeOptions.url): void => {
  const stamped = reply.raw as ServerResponse & Stamped;
  if (route !== undefined) stamped.route = route;
  stamped.requestId = request.id;
};

/** The request hooks a route may have of its own, in the order Fastify runs them. */
const ROUTE_HOOKS = ['onRequest', 'preParsing', 'preValidation', 'preHandler'] as const;

type AnyHook = (this: unknown, ...args: unknown[]) => unknown;

/**
 * Fastify's `onRoute` hook: each route stamps its pattern (known when the route is registered, so
 * nothing is looked up per request) first thing, in its first hook of its own if it has one (a
 * hook may answer before the handler: the send route's authentication), else in its handler. An
 * area whose plugin has hooks or an error handler of its own stamps there too (the dashboard proxy).
 */
export const stampRoutes = (route: RouteOptions): void => {
  const pattern = route.url;
  const stamping =
    (fn: AnyHook): AnyHook =>
    function stamped(this: unknown, ...args: unknown[]) {
      stampRoute(args[0] as FastifyRequest, args[1] as FastifyReply, pattern);
      return fn.apply(this, args);
    };
  const options = route as unknown as Record<string, AnyHook | AnyHook[] | undefined>;
  for (const phase of ROUTE_HOOKS) {
    const hooks = options[phase];
    const list = hooks === undefined ? [] : Array.isArray(hooks) ? [...hooks] : [hooks];
    if (list.length === 0) continue;
    list[0] = stamping(list[0]!);
    options[phase] = list;
    return;
  }
  route.handler = stamping(route.handler as AnyHook) as RouteOptions['handler'];
};

/** An error handler that stamps the failed request's route first: a request can fail before its handler (its body, its content type). */
export const stampingErrorHandler =
  <R>(handler: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => R) =>
  (error: FastifyError, request: FastifyRequest, reply: FastifyReply): R => {
    stampRoute(request, reply);
    return handler(error, request, reply);
  };
