import type { FastifyInstance } from 'fastify';

/** One request the dashboard proxy hands to the account backend. */
export interface ForwardRequest {
  method: string;
  /** Full path including the query string, e.g. `/dashboard/api/dashboard/apps?x=1`. */
  path: string;
  headers: Record<string, string>;
  body?: string;
}

export interface ForwardResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/**
 * The transport between the proxy and the account backend: in-process (one process) or HTTP
 * (separate roles). It must settle soon after `signal` aborts; the proxy owns the timeout.
 */
export type Forwarder = (req: ForwardRequest, signal: AbortSignal) => Promise<ForwardResponse>;

/** The backend could not be reached, or broke off before it answered (the proxy answers 502). */
export class BackendUnreachableError extends Error {
  constructor(message = 'Backend unreachable', options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'BackendUnreachableError';
  }
}

/** Network failure codes of Node sockets and undici: a request that never got an answer. */
export const NETWORK_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ETIMEDOUT',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
]);

const codeOf = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
};

/** The first network failure code in an error's cause chain (`ECONNREFUSED`, ...), if any. */
export const networkErrorCode = (error: unknown): string | undefined => {
  let current: unknown = error;
  for (let depth = 0; depth < 5 && current !== undefined && current !== null; depth++) {
    const code = codeOf(current);
    if (code !== undefined && NETWORK_ERROR_CODES.has(code)) return code;
    // AggregateError of a dual-stack connect attempt.
    const errors = (current as { errors?: unknown }).errors;
    if (Array.isArray(errors)) {
      for (const inner of errors) {
        const innerCode = networkErrorCode(inner);
        if (innerCode !== undefined) return innerCode;
      }
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
};

/** True for an error that says the backend could not be reached (the proxy answers 502). */
export const isNetworkError = (error: unknown): boolean =>
  error instanceof BackendUnreachableError || networkErrorCode(error) !== undefined;

const abortError = (signal: AbortSignal): unknown => signal.reason ?? new DOMException('The operation was aborted', 'AbortError');

/** Settles with `work`, or rejects with the abort reason as soon as `signal` aborts. */
const untilAborted = <T>(work: Promise<T>, signal: AbortSignal): Promise<T> => {
  if (signal.aborted) {
    work.catch(() => undefined);
    return Promise.reject(abortError(signal));
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortError(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    work.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
};

const stringHeaders = (headers: Record<string, unknown>): Record<string, string> => {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name.toLowerCase()] = Array.isArray(value) ? value.map(String).join(', ') : String(value);
  }
  return out;
};

/**
 * Forwards through `backend.inject` (one process). Inject cannot be cancelled, so an abort
 * settles the forward at once and the late answer is dropped.
 */
export function inProcessForwarder(backend: FastifyInstance): Forwarder {
  return async (req, signal) => {
    const work = (async (): Promise<ForwardResponse> => {
      let res;
      try {
        res = await backend.inject({
          method: req.method as 'GET',
          url: req.path,
          headers: req.headers,
          ...(req.body !== undefined ? { payload: req.body } : {}),
        });
      } catch (error) {
        // The backend instance is closed or broke down before answering.
        throw new BackendUnreachableError('Backend unreachable', { cause: error });
      }
      return { status: res.statusCode, headers: stringHeaders(res.headers), body: res.body };
    })();
    return untilAborted(work, signal);
  };
}

/** Forwards over HTTP with the global fetch to `baseUrl` (scheme, host, port; a path is kept). */
export function httpForwarder(baseUrl: string): Forwarder {
  const base = baseUrl.replace(/\/+$/, '');
  return async (req, signal) => {
    let response: Response;
    try {
      response = await fetch(`${base}${req.path}`, {
        method: req.method,
        headers: req.headers,
        redirect: 'manual',
        signal,
        ...(req.body !== undefined ? { body: req.body } : {}),
      });
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      // undici reports every network failure as TypeError('fetch failed') with the cause.
      if (isNetworkError(error) || (error instanceof TypeError && error.message === 'fetch failed')) {
        throw new BackendUnreachableError('Backend unreachable', { cause: error });
      }
      throw error;
    }
    let body: string;
    try {
      body = await response.text();
    } catch (error) {
      if (signal.aborted) throw abortError(signal);
      // The connection broke off in the middle of the answer.
      throw new BackendUnreachableError('Backend unreachable', { cause: error });
    }
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      headers[name] = value;
    });
    return { status: response.status, headers, body };
  };
}
