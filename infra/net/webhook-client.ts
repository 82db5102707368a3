import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIPv4, isIPv6 } from 'node:net';
import { isPublicAddress } from './public-address.ts';

/**
 * POSTs a webhook. The address the host name resolves to is checked where the connection is
 * made (the socket's own lookup), so a name that resolved to a public address when the URL was
 * saved and to a private one now is refused, and nothing can resolve it again between the check
 * and the connection. Answers are read up to a small bound and thrown away; a redirect is not
 * followed (it would go where the check did not look).
 */
export interface WebhookRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly timeoutMs: number;
  /** Loopback, private and link-local addresses allowed (the operator's explicit choice). */
  readonly allowLocal: boolean;
  /** Name resolution (tests replace it). */
  readonly lookup?: LookupFunction;
}

/** Why a webhook did not take the POST: its status when it answered, else what failed. Never the URL or a secret. */
/** What kind of failure an attempt met (for metrics): an answer that is not 2xx, no answer in time, no connection, an address refused, or a request that could not be made. */
export type WebhookFailureKind = 'status' | 'timeout' | 'unreachable' | 'refused' | 'request';
export type WebhookOutcome =
  | { readonly ok: true; readonly status: number }
  | { readonly ok: false; readonly status: number | null; readonly reason: string; readonly kind: WebhookFailureKind };

const MAX_ANSWER_BYTES = 64 * 1024;

export class WebhookAddressRefused extends Error {
  override readonly name = 'WebhookAddressRefused';
}

/** A lookup that refuses every address that is not public, unless local ones are allowed. */
export const guardedLookup =
  (allowLocal: boolean, lookup: LookupFunction = dns.lookup as unknown as LookupFunction): LookupFunction =>
  (hostname, options, callback) => {
    lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const list = (Array.isArray(addresses) ? addresses : [{ address: addresses as unknown as string, family: 4 }]) as dns.LookupAddress[];
      const usable = allowLocal ? list : list.filter((a) => isPublicAddress(a.address));
      if (usable.length === 0) return callback(new WebhookAddressRefused('The webhook host resolves to a loopback, private or link-local address (WEBHOOK_ALLOW_LOCAL=true allows it)'), '', 0);
      if (options.all) return (callback as unknown as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      callback(null, usable[0]!.address, usable[0]!.family);
    });
  };

export const postWebhook = (request: WebhookRequest): Promise<WebhookOutcome> =>
  new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(request.url);
    } catch {
      return resolve({ ok: false, status: null, reason: 'The webhook URL is not a URL', kind: 'request' });
    }
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    // An address in the URL is checked here: no lookup happens for it.
    if ((isIPv4(host) || isIPv6(host)) && !request.allowLocal && !isPublicAddress(host))
      return resolve({ ok: false, status: null, reason: 'The webhook host is a loopback, private or link-local address (WEBHOOK_ALLOW_LOCAL=true allows it)', kind: 'refused' });
    const client = url.protocol === 'https:' ? https : url.protocol === 'http:' ? http : undefined;
    if (!client) return resolve({ ok: false, status: null, reason: 'The webhook URL is neither https nor http', kind: 'request' });
    let settled = false;
    // One deadline for the whole attempt (connect, headers and body): a receiver that answers and
    // then drips its body a byte at a time is cut off at it, like one that never answers.
    const deadline = setTimeout(() => {
      req.destroy();
      finish({ ok: false, status: null, reason: `The webhook did not answer within ${request.timeoutMs} ms`, kind: 'timeout' });
    }, request.timeoutMs);
    const finish = (outcome: WebhookOutcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      resolve(outcome);
    };
    let req: http.ClientRequest;
    try {
      req = client.request(
        url,
        {
          method: 'POST',
          headers: { ...request.headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(request.body) },
          lookup: guardedLookup(request.allowLocal, request.lookup),
          timeout: request.timeoutMs, // idle: the deadline above bounds the whole attempt
          agent: false,
        },
        (res) => {
          const status = res.statusCode ?? 0;
          let read = 0;
          res.on('data', (chunk: Buffer) => {
            read += chunk.length;
            if (read > MAX_ANSWER_BYTES) res.destroy();
          });
          const done = () => finish(status >= 200 && status < 300 ? { ok: true, status } : { ok: false, status, reason: `The webhook answered ${status}`, kind: 'status' });
          res.on('end', done);
          res.on('close', done);
          res.on('error', done);
        },
      );
    } catch (error) {
      // Node refuses to build the request (a header value it cannot send): a failed attempt too.
      finish({ ok: false, status: null, reason: `The webhook request could not be made (${(error as NodeJS.ErrnoException).code ?? (error as Error).name})`, kind: 'request' });
      return;
    }
    req.on('timeout', () => {
      req.destroy();
      finish({ ok: false, status: null, reason: `The webhook did not answer within ${request.timeoutMs} ms`, kind: 'timeout' });
    });
    req.on('error', (error: NodeJS.ErrnoException) => {
      if (error instanceof WebhookAddressRefused) return finish({ ok: false, status: null, reason: error.message, kind: 'refused' });
      finish({ ok: false, status: null, reason: `The webhook could not be reached (${error.code ?? error.name})`, kind: 'unreachable' });
    });
    req.end(request.body);
  });
