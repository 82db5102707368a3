import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import { keepAliveAfterBodyError } from './connections.ts';

/** A request refused with words that may be shown as they are (a body that fails its schema). */
export class ClientError extends Error {
  readonly statusCode = 400;
}

/** The body of an error answer: the public API's `{ error }` or the dashboard's `{ success: false, error }`. */
export type ErrorArea = 'public' | 'dashboard';

export const errorBody = (area: ErrorArea, error: string) => (area === 'public' ? { error } : { success: false, error });

export interface ErrorHandlerOptions {
  readonly area: ErrorArea;
  /** The status of a body whose Content-Type is not JSON (the dashboard answers 403 to a PUT or DELETE). Default 400. */
  readonly mediaTypeStatus?: (request: FastifyRequest) => number;
  /** What the log line says when a request fails unexpectedly. */
  readonly failed: string;
  /** The logger of those lines (Relay's HTTP server has no Fastify logger: request-log.ts); they name the request by reqId. */
  readonly log: Logger;
}

/**
 * The one error handler of Relay's HTTP stack (public API, dashboard proxy, account backend): a
 * body the route refuses keeps its words (400), a body that is not JSON or too large gets the
 * interface's words (400, 413) without closing a connection that can go on, a backing service
 * that cannot serve gets 503 (UnavailableError, by type), anything else 500 with a log line and
 * never a stack or a secret in the answer.
 */
export const relayErrorHandler =
  (options: ErrorHandlerOptions) =>
  (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const send = (status: number, message: string) => reply.code(status).send(errorBody(options.area, message));
    if (error instanceof ClientError) return send(400, error.message);
    if (error.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return send(options.mediaTypeStatus?.(request) ?? 400, 'Content-Type must be application/json');
    if (error.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      keepAliveAfterBodyError(request, reply, error.code);
      return send(413, 'Request body too large');
    }
    if (error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500) {
      keepAliveAfterBodyError(request, reply, error.code);
      return send(400, 'Invalid JSON');
    }
    const { log } = options;
    if (isUnavailable(error)) {
      log.error({ err: error, reqId: request.id }, 'backend unavailable');
      return send(503, 'Service temporarily unavailable');
    }
    log.error({ err: error, reqId: request.id }, options.failed);
    return send(500, 'Internal server error');
  };
