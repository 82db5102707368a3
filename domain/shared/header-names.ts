import { TEXT_LIMITS } from './text.ts';

/** An HTTP field name as RFC 9110 defines it (a token): no spaces, no CR or LF, no colon. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * Request headers that HTTP, browsers, proxies or Relay itself give a meaning: a custom key
 * header may not be one of them (a `webhook-header` credential named `user-agent` would read the
 * user agent of every client as a key).
 */
const STANDARD = new Set([
  'a-im', 'accept', 'accept-charset', 'accept-datetime', 'accept-encoding', 'accept-language', 'accept-ranges', 'age', 'allow',
  'alt-svc', 'alt-used', 'authorization', 'baggage', 'cache-control', 'cdn-loop', 'connection', 'cookie', 'date', 'device-memory',
  'dnt', 'downlink', 'dpr', 'early-data', 'ect', 'etag', 'expect', 'expires', 'forwarded', 'from', 'host', 'http2-settings',
  'keep-alive', 'last-event-id', 'last-modified', 'link', 'location', 'max-forwards', 'origin', 'ping-from', 'ping-to', 'pragma',
  'prefer', 'priority', 'range', 'referer', 'referrer-policy', 'retry-after', 'rtt', 'save-data', 'server', 'set-cookie', 'te',
  'trailer', 'traceparent', 'tracestate', 'transfer-encoding', 'upgrade', 'upgrade-insecure-requests', 'user-agent', 'vary', 'via',
  'viewport-width', 'warning', 'width', 'www-authenticate', 'x-api-key', 'x-correlation-id', 'x-csrf-token', 'x-forwarded-for',
  'x-http-method-override', 'x-real-ip', 'x-request-id', 'x-requested-with', 'x-session-token', 'x-xsrf-token',
  'x-ratelimit-remaining', 'x-ratelimit-reset', 'x-content-type-options', 'x-frame-options', 'x-xss-protection',
  'strict-transport-security', 'content-security-policy',
]);

/** Families of standard or infrastructure headers. */
const STANDARD_PREFIXES = ['accept-', 'access-control-', 'content-', 'if-', 'proxy-', 'sec-', 'x-forwarded-', 'cf-', 'x-amz-', 'x-amzn-', 'x-envoy-', 'x-b3-', 'webhook-'];

/** Why `name` cannot carry a key, if it cannot (the caller adds the field name). */
export const customHeaderNameProblem = (name: string): string | undefined => {
  if (name.length > TEXT_LIMITS.headerName) return `must be at most ${TEXT_LIMITS.headerName} characters`;
  if (!TOKEN.test(name)) return 'must be an HTTP header name';
  const lower = name.toLowerCase();
  if (STANDARD.has(lower) || STANDARD_PREFIXES.some((prefix) => lower.startsWith(prefix))) return 'must not be a standard HTTP header';
  return undefined;
};
