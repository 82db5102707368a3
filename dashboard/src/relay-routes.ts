/**
 * Relay's own dashboard routes outside the account API (Signal linking, the message log, the
 * webhook's test and retry, …): same origin, the session cookie, JSON, answered
 * `{ success: true, data }` or `{ success: false, error }`. Failures in plain words (api.ts).
 */
import { failureOf, type Outcome } from './api';

/** GET `path`, or POST `body` to it when given. */
export const relayRoute = async <T>(path: string, body?: unknown): Promise<Outcome<T>> => {
  try {
    const res = await fetch(path, body === undefined ? { credentials: 'same-origin' } : { method: 'POST', credentials: 'same-origin', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const answer = (await res.json().catch(() => undefined)) as { success?: boolean; data?: T } | undefined;
    return res.ok && answer?.success && answer.data !== undefined ? { ok: true, data: answer.data } : { ok: false, failure: failureOf(res.status, answer) };
  } catch {
    return { ok: false, failure: failureOf(undefined, undefined) };
  }
};
