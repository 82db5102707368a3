import { ServerResponse, type IncomingMessage } from 'node:http';
import { LogController, type FastifyError, type FastifyReply, type FastifyRequest, type FastifyServerOptions, type RouteOptions } from 'fastify';
import type { Logger } from 'pino';
import type { RelayMetrics } from '../services/metrics.ts';

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
 * the server's Fastify has no logger ({@link fastifyLogOptions}), and the routes stamp their
 * pattern on the response (`stampRoutes`, `stampRoute`); an answer given before any route (404,
 * an unparseable URL, a request without Host) is `unmatched`. Fastify's own "incoming request"
 * and "request completed" lines are not written.
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
 * Fastify's own log lines, written with Relay's logger: the server's Fastify has no logger and no
 * child logger factory, so `request.log` and `reply.log` are Fastify's silent logger. With a
 * factory of its own, Fastify makes a child logger for every request (an object with a computed
 * key and a check of seven methods: about 1.3 µs, 3–5 % of the cheapest routes); Relay's code logs
 * with its own logger instead, naming the request by `reqId` where the line is about it. Per-request
 * lines stay off (the responses record themselves); the line of a request refused while the server
 * closes is written. Fastify's warnings about misuse of a reply (sent twice, a stream written after
 * its head) go through `reply.log` directly and are not written.
 */
class RelayLogController extends LogController {
  readonly #log: Logger;

  constructor(log: Logger) {
    super({ disableRequestLogging: true });
    this.#log = log;
  }

  override serviceUnavailable(): void {
    this.#log.info({ res: { statusCode: 503 } }, 'request aborted - refusing to accept new requests as server is closing');
  }
}

/** The logging options of a Fastify server whose responses record themselves ({@link RelayLogController}). */
export const fastifyLogOptions = (log: Logger): Pick<FastifyServerOptions, 'logController'> => ({
  logController: new RelayLogController(log),
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
