import { DASHBOARD_BODY_LIMIT, jsonShapeRefusal } from '../http/bounded-json.ts';
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { matchRoute, type RouteMatch } from './allowlist.ts';
import { isNetworkError, networkErrorCode, type ForwardRequest, type ForwardResponse, type Forwarder } from './forwarder.ts';
import { relayErrorHandler } from '../http/error-handler.ts';
import { stampingErrorHandler, stampRoute } from '../http/request-log.ts';
import { SESSION_COOKIE, withCookies } from '../http/dashboard-session.ts';
import { SESSION_REQUIRED } from '../account/session.ts';

const DEFAULT_TIMEOUT_MS = 8000;
const JSON_TYPE = 'application/json; charset=utf-8';

/** The interface's words for every answer the proxy makes itself. */
export const PROXY_ERRORS = {
  notFound: 'Not found',
  crossOrigin: 'Cross-origin requests are not allowed',
  contentType: 'Content-Type must be application/json',
  invalidJson: 'Invalid JSON',
  sessionRequired: SESSION_REQUIRED.error,
  timedOut: 'Backend request timed out',
  unreachable: 'Backend unreachable',
  backendFailed: (status: number) => `Backend request failed (${status})`,
} as const;

const fail = (reply: FastifyReply, status: number, error: string) =>
  reply.code(status).type(JSON_TYPE).send({ success: false, error });

const isMutation = (method: string) => method === 'POST' || method === 'PUT' || method === 'DELETE';

/** `application/json`, with any parameters (`; charset=utf-8`), in any case. */
const isJsonContentType = (value: string | undefined) =>
  value !== undefined && value.split(';')[0]!.trim().toLowerCase() === 'application/json';

/**
 * Same-origin rule of the interface: a missing Origin passes; `null`, an unparseable Origin, or
 * one whose host:port differs from the request's Host header is cross-origin. Default ports are
 * normalised by the scheme of the Origin (`https://a` equals `Host: a:443`).
 */
export const isCrossOrigin = (origin: string | undefined, host: string | undefined): boolean => {
  if (origin === undefined) return false;
  if (host === undefined || host === '') return true;
  try {
    const from = new URL(origin);
    if (from.protocol !== 'http:' && from.protocol !== 'https:') return true;
    const self = new URL(`${from.protocol}//${host}`);
    return from.host !== self.host || self.pathname !== '/' || self.username !== '' || self.password !== '';
  } catch {
    return true;
  }
};

/** Known from the headers alone to carry no body (a chunked body may still turn out empty). */
const hasNoBody = (request: FastifyRequest) => {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] === undefined && (length === undefined || length === '0');
};

const isValidJson = (text: string) => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/**
 * Why a client's body is refused as JSON, or undefined: its shape before it is parsed (a client's
 * body only: the backend's answers, a long member list say, are not held to a request's bounds).
 */
const jsonRefusal = (text: string): string | undefined => jsonShapeRefusal(text) ?? (isValidJson(text) ? undefined : PROXY_ERRORS.invalidJson);

/** A token is forwarded as a header value, so it must be visible ASCII; anything else is no session. */
const sessionToken = (parseCookie: (header: string) => Record<string, string | undefined>, cookieHeader: string | undefined) => {
  if (cookieHeader === undefined || cookieHeader === '') return undefined;
  let token: string | undefined;
  try {
    token = parseCookie(cookieHeader)[SESSION_COOKIE];
  } catch {
    return undefined;
  }
  return token !== undefined && /^[\x21-\x7e]+$/.test(token) ? token : undefined;
};

/** A backend JSON error body is forwarded when it is a JSON object (the `{ success, error }` family). */
const jsonObject = (text: string): boolean => {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
};

class ForwardTimeoutError extends Error {
  override name = 'ForwardTimeoutError';
}

/**
 * The interface's account-management proxy, registered with prefix `/dashboard/api/dashboard`.
 * It owns every path under the prefix and, in this order: answers 404 off the allowlist, refuses
 * cross-origin mutations, enforces the JSON Content-Type and body, turns the `relay_session`
 * cookie into `X-Session-Token`, and forwards to the account backend with a timeout.
 */
export interface ProxyOptions {
  forward: Forwarder;
  timeoutMs?: number;
  /** The routes forwarded under the prefix (default: the interface's account API table). */
  match?: (method: string, path: string) => RouteMatch | undefined;
  /** Pass the backend's Set-Cookie on (the session routes end the `relay_session` cookie). */
  passCookies?: boolean;
  /** Where the proxy's lines go (the server's Fastify has no logger of its own: request-log.ts). */
  log: Logger;
}

export function dashboardProxy(options: ProxyOptions): FastifyPluginAsync {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const { forward } = options;
  const match = options.match ?? ((method: string, path: string) => matchRoute(method, path));

  return async (app) => {
    const prefix = app.prefix;
    const matched = new WeakMap<FastifyRequest, RouteMatch>();
    // Cookies are parsed on demand only (no hook); a parent may already have registered the plugin.
    await withCookies(app);
    const parseCookie = (header: string) => app.parseCookie(header);

    // The proxy reads every body as a string itself, so Fastify's own 415/400 never answer here.
    app.removeAllContentTypeParsers();
    const bodyLimit = Math.min(app.initialConfig.bodyLimit ?? DASHBOARD_BODY_LIMIT, DASHBOARD_BODY_LIMIT);
    app.addContentTypeParser('*', { parseAs: 'string', bodyLimit }, (_request, body, done) => done(null, body));

    // Answers in the interface's words; a body that is not JSON on PUT or DELETE is 403 (its Content-Type rule).
    app.setErrorHandler(
      stampingErrorHandler(relayErrorHandler({ area: 'dashboard', failed: 'dashboard proxy failed', log: options.log, mediaTypeStatus: (request) => (request.method === 'POST' ? 400 : 403) })),
    );

    /** Rules a, b and the header part of c, before any body is read. */
    app.addHook('onRequest', async (request, reply) => {
      stampRoute(request, reply);
      const url = request.url;
      const queryAt = url.indexOf('?');
      const pathname = queryAt < 0 ? url : url.slice(0, queryAt);
      const found = pathname.startsWith(prefix) ? match(request.method, pathname.slice(prefix.length)) : undefined;
      if (!found) return fail(reply, 404, PROXY_ERRORS.notFound);
      if (isMutation(request.method) && isCrossOrigin(request.headers.origin, request.headers.host)) {
        return fail(reply, 400, PROXY_ERRORS.crossOrigin);
      }
      const contentType = request.headers['content-type'];
      if (isJsonContentType(contentType)) {
        // Normalised, so that Fastify's own media-type checks cannot answer in another shape.
        request.headers['content-type'] = 'application/json';
      } else if (request.method === 'PUT' || request.method === 'DELETE') {
        return fail(reply, 403, PROXY_ERRORS.contentType);
      } else if (request.method === 'POST' && contentType !== undefined) {
        // Any content type is fine for an empty POST body; a body must be JSON.
        if (!hasNoBody(request)) return fail(reply, 400, PROXY_ERRORS.contentType);
        delete request.headers['content-type'];
      }
      matched.set(request, found);
      return undefined;
    });

    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const match = matched.get(request);
      if (!match) return fail(reply, 404, PROXY_ERRORS.notFound);
      const { method } = request;
      const body = typeof request.body === 'string' && method !== 'GET' ? request.body : '';
      if (body !== '') {
        // A body sent without any Content-Type (the hook normalised every JSON one).
        if (request.headers['content-type'] !== 'application/json') return fail(reply, 400, PROXY_ERRORS.contentType);
        const refused = jsonRefusal(body);
        if (refused !== undefined) return fail(reply, 400, refused);
      }

      const requestId = randomUUID();
      const headers: Record<string, string> = { accept: 'application/json', 'x-request-id': requestId };
      if (request.ip) headers['x-forwarded-for'] = request.ip;
      // Whether the client came over HTTPS (behind a proxy that says so when TRUST_PROXY is on): the session cookie is then Secure.
      headers['x-forwarded-proto'] = request.protocol;
      if (body !== '') headers['content-type'] = 'application/json';
      if (match.route.session) {
        const token = sessionToken(parseCookie, request.headers.cookie);
        if (token === undefined) return fail(reply, 400, PROXY_ERRORS.sessionRequired);
        headers['x-session-token'] = token;
      }
      // The backend serves the same paths: the path and query string go on unchanged.
      const forwardRequest: ForwardRequest = {
        method,
        path: request.url,
        headers,
        ...(body !== '' ? { body } : {}),
      };

      const route = `${match.route.method} ${match.route.pattern}`;
      const began = performance.now();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(new ForwardTimeoutError(`no answer within ${timeoutMs} ms`)), timeoutMs);
      let response: ForwardResponse;
      try {
        response = await Promise.race([
          forward(forwardRequest, controller.signal),
          new Promise<never>((_resolve, reject) => {
            controller.signal.addEventListener('abort', () => reject(controller.signal.reason), { once: true });
          }),
        ]);
      } catch (error) {
        const ms = Math.round(performance.now() - began);
        if (controller.signal.aborted) {
          options.log.warn({ requestId, route, ms }, 'dashboard backend timed out');
          return fail(reply, 504, PROXY_ERRORS.timedOut);
        }
        if (isNetworkError(error)) {
          options.log.warn({ requestId, route, ms, code: networkErrorCode(error) }, 'dashboard backend unreachable');
          return fail(reply, 502, PROXY_ERRORS.unreachable);
        }
        throw error;
      } finally {
        clearTimeout(timer);
      }

      const { status } = response;
      options.log.debug({ requestId, route, status, ms: Math.round(performance.now() - began) }, 'dashboard forward');
      void reply.header('x-request-id', requestId);
      if (options.passCookies && response.headers['set-cookie'] !== undefined) void reply.header('set-cookie', response.headers['set-cookie']);
      // When to try again after a refusal for too many attempts.
      const retryAfter = response.headers['retry-after'];
      if (status === 429 && retryAfter !== undefined && /^\d{1,6}$/.test(retryAfter)) void reply.header('retry-after', retryAfter);
      if (status >= 200 && status < 300) {
        if (response.body === '') return reply.code(status).send();
        if (isValidJson(response.body)) return reply.code(status).type(JSON_TYPE).send(response.body);
        options.log.warn({ requestId, route, status }, 'dashboard backend answered 2xx without JSON');
        return fail(reply, 502, PROXY_ERRORS.backendFailed(status));
      }
      // A sign-in link lands on a page of this server: a redirect to one of its paths is passed on.
      const location = response.headers.location;
      if (status === 303 && location !== undefined && location.startsWith('/') && !location.startsWith('//')) {
        void reply.code(303).header('location', location);
        return jsonObject(response.body) ? reply.type(JSON_TYPE).send(response.body) : reply.send();
      }
      if (status < 200 || status > 599) return fail(reply, 502, PROXY_ERRORS.backendFailed(status));
      if (jsonObject(response.body)) return reply.code(status).type(JSON_TYPE).send(response.body);
      return fail(reply, status, PROXY_ERRORS.backendFailed(status));
    };

    // Every method, every path under the prefix (and the prefix itself) ends here.
    // The account API has its own OpenAPI document (/docs/account.json); the catch-all stays out of the public one.
    app.all('/', { schema: { hide: true } }, handler);
    app.all('/*', { schema: { hide: true } }, handler);
  };
}
