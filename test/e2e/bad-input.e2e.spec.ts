import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createApp, createKey, DASHBOARD, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

let relay: RelayProcess;
let account: Account;
let appId: string;
let key: string;

beforeAll(async () => {
  relay = await startRelayProcess({ env: { RATE_LIMIT_POLL_PER_MIN: '100000', RATE_LIMIT_SEND_FREE_PER_MIN: '1000000', RATE_LIMIT_VERIFY_PER_MIN: '100000' } });
  account = await createAccount(relay);
  appId = (await createApp(relay, account, ['signal'])).appId;
  key = (await createKey(relay, account, [appId])).secret;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

/** JSON-ish values, including the shapes a confused client sends. */
const jsonValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.double(),
    fc.string(),
    fc.constantFrom('signal', 'simplex', 'session', '', ' ', 'app_x'),
    fc.array(tie('value'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('appId', 'contactId', 'messenger', 'message', 'groupId', 'messages', 'name', 'protocol', 'type', 'appIds', 'status', '__proto__', 'x'), tie('value'), { maxKeys: 5 }),
  ),
})).value;

const rawBody = fc.oneof(
  jsonValue.map((v) => JSON.stringify(v) ?? 'null'),
  fc.string(),
  fc.constantFrom('{', '[', '{"messages":', '\u0000', '{"messages":[{"appId":"a"}]}}', ''),
);
const headerValue = fc.string({ maxLength: 60 }).filter((s) => /^[\x20-\x7e]*$/.test(s));

const requestArb = fc.record({
  route: fc.constantFrom(
    ['POST', '/api/v1/messages/send'],
    ['GET', '/api/v1/messages/poll'],
    ['GET', '/api/v1/auth/verify'],
    ['GET', '/api/v1/health'],
    ['GET', `${DASHBOARD}/user`],
    ['POST', `${DASHBOARD}/user`],
    ['GET', `${DASHBOARD}/apps`],
    ['POST', `${DASHBOARD}/apps`],
    ['POST', `${DASHBOARD}/apps/update`],
    ['DELETE', `${DASHBOARD}/apps/app_unknown`],
    ['PUT', `${DASHBOARD}/app-messengers/am_unknown`],
    ['GET', `${DASHBOARD}/credentials`],
    ['POST', `${DASHBOARD}/credentials`],
    ['DELETE', `${DASHBOARD}/credentials/cred_unknown`],
    ['GET', `${DASHBOARD}/configuration`],
    ['GET', `${DASHBOARD}/statistics`],
    ['POST', `${DASHBOARD}/api/v1/messages/send`],
  ),
  query: fc.oneof(fc.constant(''), fc.string({ maxLength: 20 }).map((s) => `?limit=${encodeURIComponent(s)}`), fc.string({ maxLength: 20 }).map((s) => `?${encodeURIComponent(s)}=1`)),
  body: fc.option(rawBody, { nil: undefined }),
  contentType: fc.option(fc.constantFrom('application/json', 'text/plain', 'application/json; charset=utf-8', 'multipart/form-data', 'application/x-www-form-urlencoded'), { nil: undefined }),
  auth: fc.constantFrom('good', 'none', 'garbage', 'x-api-key', 'basic'),
  session: fc.constantFrom('good', 'none', 'garbage'),
  origin: fc.option(fc.constantFrom('http://evil.example', 'null', 'not a url'), { nil: undefined }),
  extra: fc.option(headerValue, { nil: undefined }),
});

/** Statuses each kind of route may answer to bad input (the interface's lists, plus 413 for an oversized body). */
const allowed = (path: string): number[] => {
  if (path.startsWith('/api/v1/messages/send')) return [202, 400, 401, 403, 413, 429];
  if (path.startsWith('/api/v1/messages/poll')) return [200, 400, 401, 403, 429];
  if (path.startsWith('/api/v1/auth/verify')) return [200, 401, 429];
  if (path.startsWith('/api/v1/health')) return [200];
  return [200, 400, 403, 404];
};

describe('bad input', () => {
  it('thousands of random and malformed requests get documented 4xx answers, never a 500 or a crash', async () => {
    let count = 0;
    await fc.assert(
      fc.asyncProperty(requestArb, async (r) => {
        const [method, path] = r.route as [string, string];
        const headers: Record<string, string> = {};
        if (r.contentType) headers['content-type'] = r.contentType;
        if (r.auth === 'good') headers.authorization = `Bearer ${key}`;
        if (r.auth === 'garbage') headers.authorization = `Bearer ${r.extra ?? 'zzz'}`;
        if (r.auth === 'x-api-key') headers['x-api-key'] = r.extra ?? key;
        if (r.auth === 'basic') headers.authorization = `Basic ${r.extra ?? ''}`;
        if (r.session === 'good') headers.cookie = account.cookie;
        if (r.session === 'garbage') headers.cookie = `relay_session=${encodeURIComponent(r.extra ?? 'x')}`;
        if (r.origin) headers.origin = r.origin;
        const res = await fetch(`${relay.url}${path}${r.query}`, {
          method,
          headers,
          ...(r.body !== undefined && method !== 'GET' ? { body: r.body } : {}),
        });
        const text = await res.text();
        count++;
        expect(allowed(path), `${method} ${path}${r.query} → ${res.status} ${text}`).toContain(res.status);
        const body = JSON.parse(text) as Record<string, unknown>;
        if (res.status >= 400) {
          expect(typeof body.error, text).toBe('string');
          if (path.startsWith(DASHBOARD)) expect(body.success).toBe(false);
        }
      }),
      { numRuns: 3000, seed: 20261122 },
    );
    expect(count).toBe(3000);
    const health = await fetch(`${relay.url}/api/v1/health`);
    expect(health.status).toBe(200);
  });
});
