/**
 * The dashboard's client of the account API, generated from its OpenAPI document
 * (src/api/account-api.d.ts, scripts/generate-api-types.mjs) and made with openapi-fetch. Every
 * call follows the proxy's conventions: same origin, the session cookie only (never a token in
 * script), `Content-Type: application/json` on every request with a body and on DELETE and PUT.
 * Failures come back in plain words: the interface's `{ success: false, error }` or `{ error }`
 * text, a retry hint for 502 and 504, and a signed-out state when the session is gone.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { paths } from './api/account-api';

export const SIGNED_OUT = 'Session token is required';

/**
 * The proxy's conventions: JSON on every request that changes something, DELETE included (its
 * header is required even without a body); a POST or PUT without a body sends `{}`.
 */
const jsonOnEveryWrite: Middleware = {
  onRequest({ request }) {
    if (request.method === 'GET' || request.method === 'HEAD') return request;
    const headers = new Headers(request.headers);
    headers.set('content-type', 'application/json');
    if (request.body === null && request.method !== 'DELETE') return new Request(request, { body: '{}', headers });
    return new Request(request, { headers });
  },
};

export const api = createClient<paths>({ baseUrl: '', credentials: 'same-origin' });
api.use(jsonOnEveryWrite);

export type Failure = { readonly message: string; readonly signedOut: boolean; readonly retry: boolean };

/** What went wrong, in words a person can act on. */
export const failureOf = (status: number | undefined, body: unknown): Failure => {
  const said =
    body && typeof body === 'object' && 'error' in body && typeof (body as { error: unknown }).error === 'string' ? (body as { error: string }).error : undefined;
  if (status === undefined) return { message: 'Relay could not be reached. Check your connection, then try again.', signedOut: false, retry: true };
  if (said === SIGNED_OUT) return { message: 'You are signed out. Sign in again to go on.', signedOut: true, retry: false };
  if (status === 502) return { message: 'Relay’s account service did not answer (502). Try again in a moment.', signedOut: false, retry: true };
  if (status === 504) return { message: 'Relay’s account service took too long to answer (504). Try again in a moment.', signedOut: false, retry: true };
  if (status === 429) return { message: `${said ?? 'Too many requests'}. Wait a little, then try again.`, signedOut: false, retry: true };
  if (said) return { message: said, signedOut: false, retry: status >= 500 };
  return { message: `Relay answered ${status}.`, signedOut: false, retry: status >= 500 };
};

export type Outcome<T> = { readonly ok: true; readonly data: T } | { readonly ok: false; readonly failure: Failure };

/** Runs one call of the client and turns its answer into data or a failure in plain words. */
export const run = async <T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<Outcome<T>> => {
  try {
    const { data, error, response } = await call;
    if (response.ok && data !== undefined) {
      // The interface's shapes: `{ success: false, error }` can come with a 2xx from some backends.
      if (data && typeof data === 'object' && (data as { success?: unknown }).success === false) return { ok: false, failure: failureOf(response.status, data) };
      return { ok: true, data };
    }
    return { ok: false, failure: failureOf(response.status, error) };
  } catch {
    return { ok: false, failure: failureOf(undefined, undefined) };
  }
};
