import { ServerResponse, type IncomingMessage, type OutgoingHttpHeader, type OutgoingHttpHeaders } from 'node:http';
import helmet, { type HelmetOptions } from 'helmet';

/**
 * The security headers an API answer needs (the interface names X-Content-Type-Options,
 * X-Frame-Options, Strict-Transport-Security and X-XSS-Protection), with the values helmet
 * gives them. Helmet's browser-page headers (CSP, COOP, CORP, referrer policy, ...) do nothing
 * for JSON and are left out. The values do not depend on the request, so helmet is asked once
 * at start-up and every answer gets the same headers: running its middleware per request
 * cost a third of the throughput of the cheapest routes.
 */
const options: Readonly<HelmetOptions> = {
  contentSecurityPolicy: false,
  crossOriginEmbedderPolicy: false,
  crossOriginOpenerPolicy: false,
  crossOriginResourcePolicy: false,
  originAgentCluster: false,
  referrerPolicy: false,
  xDnsPrefetchControl: false,
  xDownloadOptions: false,
  xPermittedCrossDomainPolicies: false,
  xPoweredBy: false,
  xXssProtection: true,
  xFrameOptions: { action: 'sameorigin' },
  xContentTypeOptions: true,
  strictTransportSecurity: { maxAge: 15_552_000, includeSubDomains: true },
};

export const securityHeaders = (): Readonly<Record<string, string>> => {
  const headers: Record<string, string> = {};
  const response = {
    setHeader: (name: string, value: string | number | readonly string[]) => {
      headers[name] = String(value);
    },
    removeHeader: (name: string) => {
      delete headers[name];
    },
  };
  let failure: unknown;
  helmet(options)({} as IncomingMessage, response as unknown as ServerResponse, (error?: unknown) => {
    failure = error;
  });
  if (failure) throw failure;
  return Object.freeze(headers);
};

/**
 * A ServerResponse that writes the security headers with every answer, added when the answer's
 * head is written: into the headers object Fastify (or any caller) hands to `writeHead`, or with
 * `setHeader` when there is none. A header the answer sets itself is left as it is (names as
 * Fastify writes them, in lower case). Setting them with `setHeader` as each request came in
 * (what the server did before) sent every answer down Node's slower path of `writeHead`, which
 * then copies the caller's headers one `setHeader` at a time. With the cheaper request histogram
 * (apps/services/request-durations.ts), this took a `GET /health` from 108.5 to 89.5 µs of CPU (bare
 * Fastify: 64), issue 28, item 5.
 */
export const responseWithHeaders = (given: ReadonlyArray<readonly [string, string]>) => {
  /** Each header with its name in lower case, the way Fastify keys the headers it writes. */
  const headers = given.map(([name, value]) => [name.toLowerCase(), name, value] as const);
  return class SecuredResponse extends ServerResponse {
    override writeHead(statusCode: number, reason?: string | OutgoingHttpHeaders | OutgoingHttpHeader[], fields?: OutgoingHttpHeaders | OutgoingHttpHeader[]): this {
      const target = typeof reason === 'string' ? fields : reason;
      if (target !== undefined && target !== null && !Array.isArray(target) && Object.isExtensible(target)) {
        const object = target as OutgoingHttpHeaders;
        for (const [lower, name, value] of headers) if (!(lower in object) && !this.hasHeader(lower)) object[name] = value;
      } else {
        for (const [lower, name, value] of headers) if (!this.hasHeader(lower)) this.setHeader(name, value);
      }
      return typeof reason === 'string' ? super.writeHead(statusCode, reason, fields) : super.writeHead(statusCode, reason);
    }
  };
};
