import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createApp, createKey, DASHBOARD } from '../support/account-fixture.ts';
import { closesAfter, header, MisframedError, preview, RawConnection, type RawResponse } from '../support/raw-http.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

/**
 * Thousands of random and malformed requests over keep-alive connections, several connections at
 * a time, pipelined or back-to-back, against every route of the public API and of the dashboard
 * proxy (and paths off them). Responses are read with a strict raw parser. What must hold:
 *  - no 5xx;
 *  - every request sent gets one complete, well-framed response (a HEAD answer without a body),
 *    unless an earlier response announced `Connection: close`;
 *  - the server closes a connection only after complete responses (with FIN, never a reset),
 *    and keeps it after every well-framed request unless it says `Connection: close`;
 *  - every answer carries the security headers;
 *  - health answers 200 after the burst.
 * A request that cannot be framed (broken request line, header, length or chunked coding) may
 * end its connection, after its answer; the client sends nothing after it.
 *
 * Reproduce a run with HTTP_FUZZ_SEED=<seed> (printed on failure), one connection of it with
 * HTTP_FUZZ_ONLY=<session> as well (its requests are printed); HTTP_FUZZ_SESSIONS sets the number
 * of connections (default 1400, about 4,500 requests), HTTP_FUZZ_PARALLEL how many run at a time
 * (default 8). Chunk boundaries between the writes and the server's reads are up to the kernel:
 * a seed replays the same requests, their timing may differ.
 */

const SEED = Number(process.env.HTTP_FUZZ_SEED ?? Date.now() % 2 ** 31);
const SESSIONS = Number(process.env.HTTP_FUZZ_SESSIONS ?? 1400);
const PARALLEL = Number(process.env.HTTP_FUZZ_PARALLEL ?? 8);
const RESPONSE_TIMEOUT_MS = 20_000;

let relay: RelayProcess;
let port: number;
const secrets = { key: '', cookie: '', appId: '' };

beforeAll(async () => {
  relay = await startRelayProcess({
    env: { RATE_LIMIT_POLL_PER_MIN: '10000000', RATE_LIMIT_SEND_FREE_PER_MIN: '10000000', RATE_LIMIT_VERIFY_PER_MIN: '10000000' },
  });
  port = relay.port;
  const account = await createAccount(relay);
  secrets.cookie = account.cookie;
  secrets.appId = (await createApp(relay, account, ['signal'])).appId;
  secrets.key = (await createKey(relay, account, [secrets.appId])).secret;
}, 60_000);
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

// ---------------------------------------------------------------------------------------------
// The requests

/** ok: well-framed; maybe: the HTTP parser may or may not accept it; unframeable: it must not. */
type Framing = 'ok' | 'maybe' | 'unframeable';

interface FuzzRequest {
  /** The method as the response parser must know it (HEAD answers have no body). */
  method: string;
  bytes: Buffer;
  framing: Framing;
  /** Bytes past the declared length: the server may answer them as one more (bad) request. */
  leftover: boolean;
  /** The body is shorter than announced: the client half-closes after it. */
  truncated: boolean;
  /** The request asks for Connection: close. */
  closes: boolean;
  /** Not an HTTP/1.1 request (1.0, no version): its answer may run to the close of the connection. */
  oldVersion: boolean;
  /** A request to the events stream. */
  events: boolean;
  label: string;
}

type Area = 'public' | 'dashboard' | 'other';
interface Target {
  method: string;
  path: string;
  area: Area;
  /** The events stream: with a good key it must not follow (it would never end). */
  events?: boolean;
}

const FRAMED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH', 'TRACE', 'PROPFIND', 'MKCOL', 'COPY', 'LOCK', 'SEARCH', 'PURGE', 'REPORT', 'M-SEARCH'];
const BAD_METHODS = ['FOO', 'get', 'GETT', 'G3T', 'HEADX', 'POST/'];

const idValue = fc.oneof(
  fc.constantFrom('x', 'app_0123456789abcdef', 'cred_1', 'am_1', 'inv_1', '%2e%2e', '..', '.', '%ZZ', 'a%2Fb', '%F0%9F%98%80', 'a'.repeat(300), '%00', 'a%20b'),
  fc.stringMatching(/^[A-Za-z0-9_-]{1,24}$/),
);

const dashboardRoute = fc.oneof(
  fc.constantFrom(
    ['GET', '/user'],
    ['POST', '/user'],
    ['GET', '/apps'],
    ['POST', '/apps'],
    ['POST', '/apps/update'],
    ['GET', '/credentials'],
    ['GET', '/credentials-full'],
    ['POST', '/credentials'],
    ['POST', '/recovery-code'],
    ['GET', '/notification-preferences'],
    ['POST', '/notification-preferences'],
    ['GET', '/group/members'],
    ['GET', '/group/invite-link'],
    ['POST', '/group/members/add'],
    ['POST', '/group/members/remove'],
    ['POST', '/group/promote-admin'],
    ['POST', '/group/demote-admin'],
    ['GET', '/invoices'],
    ['POST', '/invoices'],
    ['GET', '/configuration'],
    // Off the allowlist.
    ['GET', '/statistics'],
    ['GET', '/realtime-statistics'],
    ['POST', '/api/v1/messages/send'],
    ['GET', '/apps/'],
    ['GET', '/APPS'],
    ['GET', ''],
    ['GET', '/'],
    ['GET', '//user'],
    ['POST', '/user/../apps'],
  ) as fc.Arbitrary<[string, string]>,
  idValue.map((id) => ['DELETE', `/apps/${id}`] as [string, string]),
  idValue.map((id) => ['PUT', `/app-messengers/${id}`] as [string, string]),
  idValue.map((id) => ['DELETE', `/credentials/${id}`] as [string, string]),
  idValue.map((id) => ['GET', `/invoices/${id}`] as [string, string]),
  idValue.map((id) => ['GET', `/invoices/${id}/payment-status`] as [string, string]),
  idValue.map((id) => ['POST', `/invoices/${id}/cancel`] as [string, string]),
  idValue.map((id) => ['GET', `/invoices/${id}/payment-status/more`] as [string, string]),
);

const targetArb: fc.Arbitrary<Target> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc
      .constantFrom(['POST', '/messages/send'], ['GET', '/messages/poll'], ['GET', '/auth/verify'], ['GET', '/health'], ['GET', '/events'])
      .map(([method, path]) => ({ method: method!, path: `/api/v1${path}`, area: 'public' as Area, ...(path === '/events' ? { events: true } : {}) })),
  },
  { weight: 5, arbitrary: dashboardRoute.map(([method, path]) => ({ method, path: `${DASHBOARD}${path}`, area: 'dashboard' as Area })) },
  // The session's own routes (outside the interface's prefix), and paths off their list.
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constantFrom(['POST', '/logout'], ['GET', '/sessions'], ['GET', '/elsewhere'], ['POST', '/sessions'], ['GET', '/']),
        idValue.map((id) => ['DELETE', `/sessions/${id}`]),
        // A sign-in link and a messenger poll token: followed by GET, used by POST (issue 47).
        idValue.chain((id) => fc.constantFrom(['GET', `/email/${id}`], ['POST', `/email/${id}`], ['GET', `/messenger/${id}`], ['POST', `/messenger/${id}`])),
      )
      .map(([method, path]) => ({ method: method!, path: `/dashboard/auth${path}`, area: 'dashboard' as Area })),
  },
  // Relay's own group route that changes state (issue 47: the interface's GET only reads), and paths off its list.
  {
    weight: 1,
    arbitrary: fc
      .constantFrom(['POST', '/invite-link'], ['GET', '/invite-link'], ['POST', '/members'], ['POST', ''])
      .map(([method, path]) => ({ method: method!, path: `/dashboard/group${path}`, area: 'dashboard' as Area })),
  },
  {
    weight: 1,
    arbitrary: fc
      .constantFrom('/', '/docs', '/docs/json', '/metrics', '/nope', '/api/v1', '/api/v1/', '/api/v2/health', '//api/v1/health', '/api/v1/health/', '/%', '/api/v1/%ZZ', '/dashboard', '/dashboard/api', '*', 'http://x/api/v1/health')
      .map((path) => ({ method: 'GET', path, area: 'other' as Area })),
  },
);

const printable = (max: number) => fc.string({ maxLength: max, unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)) });

const queryArb = fc.oneof(
  { weight: 4, arbitrary: fc.constant('') },
  { weight: 2, arbitrary: fc.constantFrom('1', '10', '50', '0', '-1', '51', 'abc', '', '1e1', '%205', '5&limit=6', '9999999999999999999').map((v) => `?limit=${v}`) },
  { weight: 2, arbitrary: fc.array(fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 })), { maxLength: 3 }).map((pairs) => `?${pairs.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join('&')}`) },
  { weight: 1, arbitrary: fc.constantFrom('?%', '?a=%ZZ', '?&&&', '?a[b]=1', '?__proto__[x]=1', '?constructor=1', '?appMessengerId=am_1', '?after=5&follow=true', '?') },
);

type BodyKind = 'none' | 'valid' | 'json' | 'invalid-json' | 'text' | 'binary' | 'large' | 'over-limit' | 'over-drain' | 'empty' | 'deep' | 'escapes' | 'huge-number' | 'many-values';
const bodyKindArb = fc.oneof(
  { weight: 30, arbitrary: fc.constant<BodyKind>('none') },
  { weight: 14, arbitrary: fc.constant<BodyKind>('valid') },
  { weight: 12, arbitrary: fc.constant<BodyKind>('json') },
  { weight: 8, arbitrary: fc.constant<BodyKind>('invalid-json') },
  { weight: 5, arbitrary: fc.constant<BodyKind>('text') },
  { weight: 4, arbitrary: fc.constant<BodyKind>('binary') },
  { weight: 4, arbitrary: fc.constant<BodyKind>('empty') },
  { weight: 3, arbitrary: fc.constant<BodyKind>('large') },
  { weight: 1, arbitrary: fc.constant<BodyKind>('over-limit') },
  // What costs a JSON parser the most per byte (issue 23): nesting, escapes, numbers, many values.
  { weight: 4, arbitrary: fc.constantFrom<BodyKind>('deep', 'escapes', 'huge-number', 'many-values') },
  { weight: 1, arbitrary: fc.constantFrom<BodyKind>('over-drain', 'none', 'none', 'none', 'none') },
);

type BodyFraming =
  | 'cl'
  | 'chunked'
  | 'chunked-ext'
  | 'chunked-trailers'
  | 'cl-short'
  | 'cl-long'
  | 'cl-invalid'
  | 'cl-dup-same'
  | 'cl-dup-diff'
  | 'chunked-bad-hex'
  | 'chunked-no-crlf'
  | 'chunked-overflow'
  | 'chunked-truncated'
  | 'chunked-space'
  | 'cl-and-te'
  | 'te-gzip-chunked'
  | 'te-chunked-gzip'
  | 'te-identity';
const bodyFramingArb = fc.oneof(
  { weight: 60, arbitrary: fc.constant<BodyFraming>('cl') },
  { weight: 12, arbitrary: fc.constant<BodyFraming>('chunked') },
  { weight: 3, arbitrary: fc.constantFrom<BodyFraming>('chunked-ext', 'chunked-trailers') },
  {
    weight: 8,
    arbitrary: fc.constantFrom<BodyFraming>(
      'cl-short',
      'cl-long',
      'cl-invalid',
      'cl-dup-same',
      'cl-dup-diff',
      'chunked-bad-hex',
      'chunked-no-crlf',
      'chunked-overflow',
      'chunked-truncated',
      'chunked-space',
      'cl-and-te',
      'te-gzip-chunked',
      'te-chunked-gzip',
      'te-identity',
    ),
  },
);

type Malformation =
  | 'none'
  | 'space-in-target'
  | 'ctl-in-target'
  | 'no-version'
  | 'http-1.0'
  | 'http-1.0-keep-alive'
  | 'bad-version'
  | 'header-no-colon'
  | 'header-space-name'
  | 'header-ctl-value'
  | 'header-nul'
  | 'obs-fold'
  | 'bare-lf'
  | 'high-bytes'
  | 'oversized-header'
  | 'oversized-url'
  | 'big-header'
  | 'missing-host'
  | 'dup-host'
  | 'leading-crlf'
  | 'upgrade';
const malformationArb = fc.oneof(
  { weight: 150, arbitrary: fc.constant<Malformation>('none') },
  { weight: 6, arbitrary: fc.constantFrom<Malformation>('big-header', 'missing-host', 'dup-host', 'leading-crlf', 'http-1.0', 'http-1.0-keep-alive', 'high-bytes') },
  { weight: 4, arbitrary: fc.constantFrom<Malformation>('oversized-header', 'oversized-url') },
  {
    weight: 5,
    arbitrary: fc.constantFrom<Malformation>(
      'space-in-target',
      'ctl-in-target',
      'no-version',
      'bad-version',
      'header-no-colon',
      'header-space-name',
      'header-ctl-value',
      'header-nul',
      'obs-fold',
      'bare-lf',
      'upgrade',
    ),
  },
);

const choicesArb = fc.record({
  target: targetArb,
  method: fc.oneof(
    { weight: 45, arbitrary: fc.constant<string | undefined>(undefined) },
    { weight: 15, arbitrary: fc.constantFrom(...FRAMED_METHODS) },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_METHODS, 'CONNECT') },
  ),
  query: queryArb,
  auth: fc.constantFrom('good', 'good', 'good', 'none', 'none', 'none', 'garbage', 'basic', 'x-api-key', 'twice'),
  cookie: fc.constantFrom('good', 'good', 'good', 'none', 'none', 'none', 'garbage', 'doubled'),
  origin: fc.constantFrom(undefined, undefined, undefined, undefined, undefined, undefined, 'http://x', 'http://evil.example', 'null'),
  contentType: fc.constantFrom(
    'json',
    'json',
    'json',
    'json',
    undefined,
    undefined,
    'application/json; charset=utf-8',
    'text/plain',
    'application/xml',
    'multipart/form-data; boundary=x',
    '',
    'application/JSON',
    'application/json, text/plain',
    ';;;',
    'dup',
  ),
  expect: fc.constantFrom(...Array<undefined>(15).fill(undefined), '100-continue', '100-continue', '100-continue', 'something-else'),
  connection: fc.constantFrom(undefined, undefined, undefined, undefined, undefined, undefined, undefined, undefined, 'keep-alive', 'close', 'Keep-Alive, foo'),
  extras: fc.array(
    fc.oneof(
      fc.tuple(fc.constantFrom('X-Foo', 'Accept', 'Last-Event-ID', 'Accept-Encoding', 'X-Forwarded-For', 'Content-Encoding', 'TE', 'X-Request-Id', 'Referer'), printable(40)),
      fc.tuple(fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,20}$/), printable(60)),
    ),
    { maxLength: 3 },
  ),
  body: bodyKindArb,
  bodyFraming: bodyFramingArb,
  malformation: malformationArb,
  text: fc.string({ maxLength: 200 }),
  binary: fc.uint8Array({ maxLength: 300 }),
  json: fc.json({ maxDepth: 3 }),
  large: fc.integer({ min: 60_000, max: 400_000 }),
  chunkSizes: fc.array(fc.integer({ min: 1, max: 5000 }), { minLength: 1, maxLength: 6 }),
  salt: fc.integer({ min: 0, max: 1_000_000 }),
});
type Choices = typeof choicesArb extends fc.Arbitrary<infer T> ? T : never;

const BODY_LIMIT = 2 * 1024 * 1024;

/** A body meant to be accepted by the route (with good credentials). */
const validBody = (c: Choices): string => {
  const path = c.target.path.slice(c.target.path.startsWith(DASHBOARD) ? DASHBOARD.length : 0);
  if (c.target.path.endsWith('/messages/send')) {
    return JSON.stringify({ messages: [{ appId: secrets.appId, contactId: `+1555${c.salt}`, messenger: 'signal', message: `fuzz ${c.salt}` }] });
  }
  if (path === '/apps') return JSON.stringify({ name: `fuzz ${c.salt}`, protocol: ['signal'] });
  if (path === '/user') return JSON.stringify({ name: `fuzz ${c.salt}` });
  if (path === '/credentials') return JSON.stringify({ type: 'api-key', appIds: [secrets.appId], name: `fuzz ${c.salt}` });
  if (path === '/apps/update') return JSON.stringify({ appId: 'app_unknown', deliveryType: 'poll' });
  if (path.startsWith('/group/')) return JSON.stringify({ appMessengerId: 'am_unknown', contactId: '1' });
  if (path.startsWith('/app-messengers/')) return JSON.stringify({ status: c.salt % 2 ? 'active' : 'enabled' });
  return '{}';
};

const bodyBytes = (c: Choices): Buffer | undefined => {
  switch (c.body) {
    case 'none':
      return undefined;
    case 'empty':
      return Buffer.alloc(0);
    case 'valid':
      return Buffer.from(validBody(c));
    case 'json':
      return Buffer.from(c.json);
    case 'invalid-json':
      return Buffer.from(['{', '[1,', '{"a":}', '{"messages":[{]}', 'nul', `{"x":"${c.text}`][c.salt % 6]!);
    case 'text':
      return Buffer.from(c.text);
    case 'binary':
      return Buffer.from(c.binary);
    case 'large':
      return Buffer.from(`{"messages":[],"pad":"${'p'.repeat(c.large)}"}`);
    case 'over-limit':
      return Buffer.alloc(BODY_LIMIT + 1 + (c.salt % 300_000), 'o');
    case 'over-drain':
      return Buffer.alloc(9 * 1024 * 1024, 'd');
    case 'deep': {
      // Up to a million deep (the review's body), closed or not, inside the send body or bare.
      const depth = [33, 1000, 100_000, 1_000_000][c.salt % 4]!;
      const open = '['.repeat(depth);
      const close = c.salt % 3 === 0 ? '' : ']'.repeat(depth);
      return Buffer.from(c.salt % 2 ? `{"messages":${open}${close}}` : `${open}${close}`);
    }
    case 'escapes':
      return Buffer.from(`{"messages":[],"x":"${['\\u0000', '\\"', '\\\\', '\\ud83d\\ude00'][c.salt % 4]!.repeat(Math.floor(c.large / 4))}"}`);
    case 'huge-number':
      return Buffer.from(`{"messages":[],"n":${['1', '-0.', '1e'][c.salt % 3]}${'9'.repeat(c.large)}}`);
    case 'many-values':
      return Buffer.from(`{"messages":[${Array.from({ length: Math.floor(c.large / 20) }, (_, i) => String(i)).join(',')}]}`);
  }
};

const chunk = (data: Buffer, sizes: number[], ext = ''): Buffer => {
  const parts: Buffer[] = [];
  let at = 0;
  let i = 0;
  while (at < data.length) {
    const size = Math.min(data.length - at, sizes[i++ % sizes.length]! * (data.length > 50_000 ? 40 : 1));
    parts.push(Buffer.from(`${size.toString(16)}${ext}\r\n`), data.subarray(at, at + size), Buffer.from('\r\n'));
    at += size;
  }
  return Buffer.concat(parts);
};

/** Builds the bytes of one request from the choices, and says how well-framed it is. */
const buildRequest = (c: Choices): FuzzRequest => {
  const t = c.target;
  let method = c.method ?? t.method;
  const notes: string[] = [];
  let framing: Framing = 'ok';
  const worst = (f: Framing) => {
    if (f === 'unframeable' || (f === 'maybe' && framing === 'ok')) framing = f;
  };
  if (BAD_METHODS.includes(method)) worst('unframeable');
  if (method === 'CONNECT') worst('unframeable');

  let query = c.query;
  if (t.events && c.auth !== 'none' && c.auth !== 'garbage' && c.auth !== 'basic') {
    // A stream that follows never ends: with a key that may be good, follow=false only.
    query = c.salt % 3 === 0 ? '?follow=false&after=abc' : '?follow=false';
  }
  let target = t.path === '*' || t.path.startsWith('http:') ? t.path : `${t.path}${query}`;
  let version = 'HTTP/1.1';
  const headers: Array<[string, string]> = [];
  let host: string | undefined = 'x';
  const rawHeaderLines: string[] = [];
  let prefix = '';
  let eol = '\r\n';

  switch (c.malformation) {
    case 'space-in-target':
      target = `${t.path}/a b`;
      worst('unframeable');
      break;
    case 'ctl-in-target':
      target = `${t.path}\x01`;
      worst('unframeable');
      break;
    case 'no-version':
      version = '';
      worst('maybe');
      break;
    case 'http-1.0':
      version = 'HTTP/1.0';
      break;
    case 'http-1.0-keep-alive':
      version = 'HTTP/1.0';
      headers.push(['Connection', 'keep-alive']);
      break;
    case 'bad-version':
      version = ['HTTP/1.7', 'HTTX/1.1', 'HTTP/11', 'http/1.1', 'HTTP/2.0'][c.salt % 5]!;
      worst('maybe');
      break;
    case 'header-no-colon':
      rawHeaderLines.push('NoColonHere');
      worst('unframeable');
      break;
    case 'header-space-name':
      rawHeaderLines.push('Bad Header: x');
      worst('unframeable');
      break;
    case 'header-ctl-value':
      rawHeaderLines.push('X-Ctl: a\x01b');
      worst('unframeable');
      break;
    case 'header-nul':
      rawHeaderLines.push('X-Nul: a\x00b');
      worst('unframeable');
      break;
    case 'obs-fold':
      rawHeaderLines.push('X-Folded: a', ' continued');
      worst('maybe');
      break;
    case 'bare-lf':
      eol = '\n';
      worst('maybe');
      break;
    case 'high-bytes':
      rawHeaderLines.push('X-High: caf\xe9 \xff');
      worst('maybe');
      break;
    case 'oversized-header':
      headers.push(['X-Big', 'b'.repeat(17_000 + (c.salt % 3000))]);
      worst('unframeable');
      break;
    case 'oversized-url':
      target = `${t.path}?pad=${'u'.repeat(17_000 + (c.salt % 3000))}`;
      worst('unframeable');
      break;
    case 'big-header':
      headers.push(['X-Big', 'b'.repeat(6000)]);
      break;
    case 'missing-host':
      host = undefined;
      break;
    case 'dup-host':
      headers.push(['Host', 'y']);
      break;
    case 'leading-crlf':
      prefix = '\r\n';
      break;
    case 'upgrade':
      headers.push(['Connection', 'Upgrade'], ['Upgrade', 'websocket']);
      worst('maybe');
      break;
    case 'none':
      break;
  }
  if (host !== undefined) headers.unshift(['Host', host]);

  switch (c.auth) {
    case 'good':
      headers.push(['Authorization', `Bearer ${secrets.key}`]);
      break;
    case 'garbage':
      headers.push(['Authorization', `Bearer rk_${c.salt}garbage`]);
      break;
    case 'basic':
      headers.push(['Authorization', 'Basic Zm9vOmJhcg==']);
      break;
    case 'x-api-key':
      headers.push(['X-API-Key', secrets.key]);
      break;
    case 'twice':
      headers.push(['Authorization', `Bearer ${secrets.key}`], ['Authorization', 'Bearer other']);
      break;
  }
  if (c.cookie === 'good') headers.push(['Cookie', secrets.cookie]);
  if (c.cookie === 'garbage') headers.push(['Cookie', `relay_session=rls_${c.salt}`]);
  if (c.cookie === 'doubled') headers.push(['Cookie', `${secrets.cookie}; relay_session="x"`], ['Cookie', 'a=b']);
  if (c.origin !== undefined) headers.push(['Origin', c.origin]);
  if (c.contentType === 'json') headers.push(['Content-Type', 'application/json']);
  else if (c.contentType === 'dup') headers.push(['Content-Type', 'application/json'], ['Content-Type', 'text/plain']);
  else if (c.contentType !== undefined) headers.push(['Content-Type', c.contentType]);
  if (c.expect !== undefined) headers.push(['Expect', c.expect]);
  if (c.connection !== undefined) headers.push(['Connection', c.connection]);
  for (const [name, value] of c.extras) headers.push([name, value]);

  let body = bodyBytes(c);
  let leftover = false;
  let truncated = false;
  if (body !== undefined) {
    switch (c.bodyFraming) {
      case 'cl':
        headers.push(['Content-Length', String(body.length)]);
        break;
      case 'chunked':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([chunk(body, c.chunkSizes), Buffer.from('0\r\n\r\n')]);
        break;
      case 'chunked-ext':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([chunk(body, c.chunkSizes, ';ext=1;flag'), Buffer.from('0\r\n\r\n')]);
        break;
      case 'chunked-trailers':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([chunk(body, c.chunkSizes), Buffer.from('0\r\nX-Trailer: t\r\n\r\n')]);
        break;
      case 'cl-short':
        if (body.length === 0) body = Buffer.from('zz');
        headers.push(['Content-Length', String(Math.floor(body.length / 2))]);
        leftover = true;
        worst('unframeable');
        break;
      case 'cl-long':
        headers.push(['Content-Length', String(body.length + 1 + (c.salt % 1000))]);
        truncated = true;
        worst('unframeable');
        break;
      case 'cl-invalid':
        headers.push(['Content-Length', ['abc', '-1', '1.5', '+5', '0x10', '99999999999999999999999', '1 2', ''][c.salt % 8]!]);
        worst('unframeable');
        break;
      case 'cl-dup-same':
        headers.push(['Content-Length', String(body.length)], ['Content-Length', String(body.length)]);
        worst('maybe');
        break;
      case 'cl-dup-diff':
        headers.push(['Content-Length', String(body.length)], ['Content-Length', String(body.length + 1)]);
        worst('unframeable');
        break;
      case 'chunked-bad-hex':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([Buffer.from('zz\r\n'), body, Buffer.from('\r\n0\r\n\r\n')]);
        worst('unframeable');
        break;
      case 'chunked-no-crlf':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([Buffer.from(`${(body.length + 1).toString(16)}\r\n`), body, Buffer.from('XY\r\n0\r\n\r\n')]);
        worst('unframeable');
        break;
      case 'chunked-overflow':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([Buffer.from('fffffffffffffffffff\r\n'), body]);
        worst('unframeable');
        break;
      case 'chunked-truncated':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = chunk(body.length > 0 ? body : Buffer.from('t'), c.chunkSizes);
        truncated = true;
        worst('unframeable');
        break;
      case 'chunked-space':
        headers.push(['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([Buffer.from(`${body.length.toString(16)} \r\n`), body, Buffer.from('\r\n0\r\n\r\n')]);
        worst('maybe');
        break;
      case 'cl-and-te':
        headers.push(['Content-Length', String(body.length)], ['Transfer-Encoding', 'chunked']);
        body = Buffer.concat([chunk(body, c.chunkSizes), Buffer.from('0\r\n\r\n')]);
        worst('maybe');
        break;
      case 'te-gzip-chunked':
        headers.push(['Transfer-Encoding', 'gzip, chunked']);
        body = Buffer.concat([chunk(body, c.chunkSizes), Buffer.from('0\r\n\r\n')]);
        worst('maybe');
        break;
      case 'te-chunked-gzip':
        headers.push(['Transfer-Encoding', 'chunked, gzip']);
        body = Buffer.concat([chunk(body, c.chunkSizes), Buffer.from('0\r\n\r\n')]);
        worst('maybe');
        break;
      case 'te-identity':
        headers.push(['Transfer-Encoding', 'identity'], ['Content-Length', String(body.length)]);
        worst('maybe');
        break;
    }
  }
  // As the HTTP parser decides it: HTTP/1.1 closes on a close token, HTTP/1.0 without a keep-alive one.
  const connectionTokens = headers.filter(([n]) => n === 'Connection').flatMap(([, v]) => v.toLowerCase().split(',').map((t) => t.trim()));
  const closes = version === 'HTTP/1.0' ? !connectionTokens.includes('keep-alive') : connectionTokens.includes('close');

  const requestLine = version === '' ? `${method} ${target}` : `${method} ${target} ${version}`;
  const head = prefix + [requestLine, ...headers.map(([n, v]) => `${n}: ${v}`), ...rawHeaderLines].join(eol) + eol + eol;
  const bytes = Buffer.concat([Buffer.from(head, 'latin1'), body ?? Buffer.alloc(0)]);
  if (c.malformation !== 'none') notes.push(c.malformation);
  if (body !== undefined) notes.push(`${c.body}/${c.bodyFraming} ${body.length}B`);
  if (c.expect) notes.push(`expect ${c.expect}`);
  if (c.connection) notes.push(`connection ${c.connection}`);
  if (method === 'CONNECT' || BAD_METHODS.includes(method)) method = 'GET';
  return {
    method: requestLine.startsWith('HEAD ') ? 'HEAD' : method,
    bytes,
    framing,
    leftover,
    truncated,
    closes,
    oldVersion: version !== 'HTTP/1.1',
    events: t.events === true,
    label: `${requestLine.slice(0, 120)}${requestLine.length > 120 ? '…' : ''} [${framing}${notes.length ? `; ${notes.join('; ')}` : ''}]`,
  };
};

interface Session {
  mode: 'pipelined' | 'sequential';
  requests: Choices[];
  /** Where to split each request's bytes into separate writes (fractions of its length). */
  splits: number[];
}

const sessionArb: fc.Arbitrary<Session> = fc.record({
  mode: fc.constantFrom('pipelined', 'sequential'),
  requests: fc.array(choicesArb, { minLength: 1, maxLength: 40 }),
  splits: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 3 }),
});

// ---------------------------------------------------------------------------------------------
// Running a session and checking what came back

interface Outcome {
  sent: number;
  answered: RawResponse[];
  problems: string[];
}

const SECURITY_HEADERS = ['x-content-type-options', 'x-frame-options', 'strict-transport-security', 'x-xss-protection'];

const checkResponse = (req: FuzzRequest, res: RawResponse, problems: string[]) => {
  if (res.status >= 500) problems.push(`${res.status} ${preview(res.body, 200)} for ${req.label}`);
  const missing = SECURITY_HEADERS.filter((name) => header(res, name) === undefined);
  if (missing.length > 0) problems.push(`answer ${res.status} without ${missing.join(', ')} for ${req.label}`);
  if (req.method === 'HEAD' && res.body.length > 0) problems.push(`HEAD answered with a body for ${req.label}`);
  if (res.closeDelimited && !req.oldVersion) problems.push(`answer ${res.status} without length, delimited by the close, for ${req.label}`);
};

const runSession = async (session: Session): Promise<Outcome> => {
  const all = session.requests.map(buildRequest);
  // Nothing is sent after a request that ends the conversation.
  const stop = all.findIndex((r) => r.framing !== 'ok' || r.truncated || r.closes);
  const requests = stop < 0 ? all : all.slice(0, stop + 1);
  const last = requests[requests.length - 1]!;
  const problems: string[] = [];
  const answered: RawResponse[] = [];
  const conn = await RawConnection.open(port);
  const splitsOf = (bytes: Buffer) => session.splits.map((f) => Math.floor(f * bytes.length));
  const deadline = () => Date.now() + RESPONSE_TIMEOUT_MS;
  let serverCloses = false;
  try {
    if (session.mode === 'pipelined') {
      const bytes = Buffer.concat(requests.map((r) => r.bytes));
      await conn.write(bytes, splitsOf(bytes));
      if (last.truncated) conn.end();
    }
    for (const [i, req] of requests.entries()) {
      if (session.mode === 'sequential') {
        await conn.write(req.bytes, splitsOf(req.bytes));
        if (req.truncated) conn.end();
      }
      const res = await conn.response(req.method, deadline());
      if (res === 'timeout') {
        problems.push(`no answer within ${RESPONSE_TIMEOUT_MS} ms to request ${i} ${req.label}`);
        return { sent: i + 1, answered, problems };
      }
      if (res === 'closed') {
        const how = conn.outcome?.error ?? (conn.fin ? 'FIN' : 'close');
        problems.push(`connection ended (${how}) without an answer to request ${i} ${req.label}; pending ${preview(conn.parser.pending)}`);
        return { sent: i + 1, answered, problems };
      }
      answered.push(res);
      checkResponse(req, res, problems);
      if (closesAfter(res) || res.closeDelimited) {
        serverCloses = true;
        break;
      }
      if (req.closes) problems.push(`answer to a Connection: close request without Connection: close: ${req.label}`);
    }
    // A client closes its side once it has read an answer that closes the connection.
    if (serverCloses && !last.truncated) conn.end();
    // After an unframeable request, an answer to its leftover bytes may come before the close.
    if (!serverCloses) {
      if (!last.truncated) conn.end();
      if (last.framing !== 'ok' && last.leftover) {
        const extra = await conn.response('GET', deadline());
        if (typeof extra === 'object') {
          answered.push(extra);
          if (extra.status < 400 || extra.status >= 500) problems.push(`answer ${extra.status} to the leftover of ${last.label}`);
        }
      }
    }
    if (!(await conn.closed(deadline()))) problems.push(`server did not close after ${last.label}`);
    if (!(await conn.gone(deadline()))) problems.push(`connection not closed after ${last.label}`);
    if (conn.parser.pending.length > 0) problems.push(`bytes after the last answer: ${preview(conn.parser.pending)} (last request ${last.label})`);
    if (conn.outcome?.error) problems.push(`connection error ${conn.outcome.error} after ${answered.length} answers (last request ${last.label})`);
  } catch (error) {
    if (!(error instanceof MisframedError)) throw error;
    problems.push(`misframed answer after ${answered.length} answers: ${error.message} (requests ${requests.map((r) => r.label).join(' | ')})`);
  } finally {
    conn.destroy();
  }
  return { sent: requests.length, answered, problems };
};

/** The kind of a problem, for the report: its text without the session, the request and numbers. */
const kindOf = (problem: string) => problem.replace(/^session \d+ \(\w+\): /, '').replace(/ (for|to|after|without an answer to) .*$/s, '').replace(/\d+/g, 'N').slice(0, 90);

describe('HTTP fuzz over keep-alive connections', () => {
  it('answers every request in well-framed HTTP, without 5xx or resets, and stays healthy', async () => {
    const sampled = fc.sample(sessionArb, { seed: SEED, numRuns: SESSIONS });
    // HTTP_FUZZ_ONLY=<n> replays one session of the seed alone (its requests are printed).
    const only = process.env.HTTP_FUZZ_ONLY === undefined ? undefined : Number(process.env.HTTP_FUZZ_ONLY);
    const sessions = only === undefined ? sampled : [sampled[only]!];
    if (only !== undefined) console.log(sessions[0]!.requests.map((c, i) => `${i}: ${buildRequest(c).label}\n   ${preview(buildRequest(c).bytes, 600)}`).join('\n'));
    const problems: string[] = [];
    const statuses = new Map<number, number>();
    let sent = 0;
    let next = 0;
    const started = Date.now();
    const worker = async () => {
      while (next < sessions.length) {
        const index = next++;
        const outcome = await runSession(sessions[index]!);
        sent += outcome.sent;
        for (const res of outcome.answered) statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        for (const problem of outcome.problems) problems.push(`session ${index} (${sessions[index]!.mode}): ${problem}`);
      }
    };
    await Promise.all(Array.from({ length: PARALLEL }, worker));
    const summary = `seed ${SEED}: ${sessions.length} connections, ${sent} requests in ${Date.now() - started} ms; statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`;
    console.log(`http fuzz ${summary}`);
    // The problems grouped by kind, with up to three examples each.
    const kinds = new Map<string, string[]>();
    for (const problem of problems) kinds.set(kindOf(problem), [...(kinds.get(kindOf(problem)) ?? []), problem]);
    const report = [...kinds].map(([kind, list]) => `${list.length} × ${kind}\n    ${list.slice(0, 3).join('\n    ')}`);
    expect(report, `HTTP_FUZZ_SEED=${SEED} — ${problems.length} problems; ${summary}`).toEqual([]);

    // Nothing failed inside either: no error logged, no answer given twice.
    const logged = relay.output().split('\n').filter((line) => /"level":[56]0/.test(line) || /already sent/i.test(line));
    expect(logged.slice(0, 10), `HTTP_FUZZ_SEED=${SEED}`).toEqual([]);
    const health = await fetch(`${relay.url}/api/v1/health`);
    expect(health.status, `HTTP_FUZZ_SEED=${SEED}`).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok' });
  }, 170_000);
});
