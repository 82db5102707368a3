import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { Writable } from 'node:stream';
import Fastify, { type FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DASHBOARD_ROUTES, matchRoute } from './allowlist.ts';
import { BackendUnreachableError, httpForwarder, inProcessForwarder, type Forwarder } from './forwarder.ts';
import { dashboardProxy } from './proxy.ts';

const PREFIX = '/dashboard/api/dashboard';
const TOKEN = 'rls_session-token-0123456789';
const COOKIE = `theme=dark; relay_session=${TOKEN}`;
const JSON_CT = { 'content-type': 'application/json' };

const err = (error: string) => ({ success: false, error });

/** A fake account backend: echoes what it received; some invoice ids answer in special ways. */
const buildBackend = () => {
  const backend = Fastify();
  const hits: string[] = [];
  backend.removeAllContentTypeParsers();
  backend.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  backend.all(`${PREFIX}/*`, async (request, reply) => {
    hits.push(`${request.method} ${request.url}`);
    const invoice = /\/invoices\/([^/?]+)/.exec(request.url)?.[1];
    if (invoice === 'bad-request') return reply.code(400).send(err('Invoice not found'));
    if (invoice === 'boom') return reply.code(500).type('text/plain').send('boom');
    if (invoice === 'text') return reply.code(200).type('text/plain').send('hello');
    if (invoice === 'empty') return reply.code(204).send();
    if (invoice === 'raw') return reply.code(201).type('application/json').send('{ "spaced" :  1 }');
    if (invoice === 'slow') {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      return { slow: true };
    }
    return { method: request.method, url: request.url, query: request.query, headers: request.headers, body: request.body ?? null };
  });
  return { backend, hits };
};

const buildProxy = async (forward: Forwarder, options: { timeoutMs?: number; bodyLimit?: number; logs?: string[] } = {}) => {
  const logs = options.logs;
  const stream = new Writable({
    write(chunk, _encoding, callback) {
      logs?.push(String(chunk));
      callback();
    },
  });
  // As on Relay's server: Fastify has no logger of its own, the proxy writes with the one it is given.
  const app = Fastify({ bodyLimit: options.bodyLimit ?? 1024 * 1024 });
  const log = pino({ level: logs ? 'debug' : 'silent' }, stream);
  // The surrounding server answers in its own shape; nothing of it may leak under the prefix.
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ error: 'Not found' }));
  app.setErrorHandler((_error, _request, reply) => reply.code(418).send({ error: 'server handler' }));
  await app.register(dashboardProxy({ forward, log, ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}) }), { prefix: PREFIX });
  await app.ready();
  return app;
};

const call = async (app: FastifyInstance, method: string, route: string, headers: Record<string, string> = {}, body?: string) => {
  const res = await app.inject({ method: method as 'GET', url: `${PREFIX}${route}`, headers, ...(body !== undefined ? { payload: body } : {}) });
  return { status: res.statusCode, body: res.body === '' ? undefined : (JSON.parse(res.body) as any), raw: res.body, headers: res.headers };
};

const closedPort = async () => {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
};

const modes: Array<{ name: string; connect: (backend: FastifyInstance) => Promise<Forwarder> }> = [
  {
    name: 'in-process forwarder (inject)',
    connect: async (backend) => {
      await backend.ready();
      return inProcessForwarder(backend);
    },
  },
  {
    name: 'HTTP forwarder (fetch to 127.0.0.1)',
    connect: async (backend) => {
      await backend.listen({ port: 0, host: '127.0.0.1' });
      return httpForwarder(`http://127.0.0.1:${(backend.server.address() as AddressInfo).port}/`);
    },
  },
];

describe.each(modes)('dashboard proxy through the $name', ({ connect }) => {
  const { backend, hits } = buildBackend();
  let proxy: FastifyInstance;
  let forward: Forwarder;
  beforeAll(async () => {
    forward = await connect(backend);
    proxy = await buildProxy(forward);
  });
  afterAll(async () => {
    await proxy.close();
    await backend.close();
  });
  const hitsDuring = async <T>(work: () => Promise<T>) => {
    const before = hits.length;
    await work();
    return hits.slice(before);
  };

  it('forwards the cookie as X-Session-Token, strips the client’s one and the Cookie header, keeps the query string', async () => {
    const res = await call(proxy, 'GET', '/apps?limit=5&name=a%20b', { cookie: COOKIE, 'x-session-token': 'forged', 'x-forwarded-for': '6.6.6.6' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toMatchObject({ method: 'GET', url: `${PREFIX}/apps?limit=5&name=a%20b`, query: { limit: '5', name: 'a b' }, body: null });
    const received = res.body.headers as Record<string, string>;
    expect(received['x-session-token']).toBe(TOKEN);
    expect(received.cookie).toBeUndefined();
    expect(received['content-type']).toBeUndefined();
    expect(received['x-forwarded-for']).toBe('127.0.0.1');
    expect(received['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    expect(res.headers['x-request-id']).toBe(received['x-request-id']);
  });

  it('forwards a JSON body and its content type; a 2xx JSON answer passes through byte for byte', async () => {
    const body = '{"name":"Helpdesk","protocol":["signal"]}';
    const res = await call(proxy, 'POST', '/apps', { cookie: COOKIE, 'content-type': 'application/json; charset=utf-8' }, body);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ method: 'POST', url: `${PREFIX}/apps`, body });
    expect(res.body.headers['content-type']).toBe('application/json');
    const raw = await call(proxy, 'GET', '/invoices/raw', { cookie: COOKIE });
    expect([raw.status, raw.raw, raw.headers['content-type']]).toEqual([201, '{ "spaced" :  1 }', 'application/json; charset=utf-8']);
    expect(await call(proxy, 'GET', '/invoices/empty', { cookie: COOKIE })).toMatchObject({ status: 204, raw: '' });
  });

  it('404 off the allowlist, before any other rule, and nothing reaches the backend', async () => {
    const offList: Array<[string, string]> = [
      ['GET', '/nope'],
      ['POST', '/api/v1/messages/send'],
      ['GET', '/api/v1/messages/poll'],
      ['GET', '/statistics'],
      ['GET', '/realtime-statistics'],
      ['GET', '/main'],
      ['GET', '/metrics/app_1'],
      ['GET', ''],
      ['GET', '/'],
      ['GET', '/apps/'],
      ['GET', '/APPS'],
      ['GET', '//apps'],
      ['PATCH', '/apps'],
      ['DELETE', '/apps'],
      ['GET', '/apps/app_1'],
      ['PUT', '/apps/update'],
      ['POST', '/configuration'],
      ['GET', '/invoices/inv_1/cancel'],
      ['DELETE', '/apps/..'],
      ['DELETE', '/apps/%2e%2E'],
      ['DELETE', '/credentials/a%2Fb'],
      ['OPTIONS', '/apps'],
    ];
    const seen = await hitsDuring(async () => {
      for (const [method, route] of offList) {
        const res = await call(proxy, method, route, { origin: 'https://evil.example', 'content-type': 'text/plain' }, method === 'GET' || method === 'OPTIONS' ? undefined : 'x');
        expect([method, route, res.status, res.body]).toEqual([method, route, 404, err('Not found')]);
      }
    });
    expect(seen).toEqual([]);
    // Outside the prefix the surrounding server answers, in its own shape.
    const outside = await proxy.inject({ method: 'GET', url: `${PREFIX}x` });
    expect([outside.statusCode, outside.json()]).toEqual([404, { error: 'Not found' }]);
  });

  it('POST, PUT and DELETE must be same-origin; a missing Origin passes; GET is not checked', async () => {
    const post = (headers: Record<string, string>) => call(proxy, 'POST', '/user', { cookie: COOKIE, ...JSON_CT, ...headers }, '{"name":"x"}');
    for (const origin of ['https://evil.example', 'http://relay.example:9090', 'https://relay.example', 'null', 'not a url', 'file:///etc']) {
      expect(await post({ host: 'relay.example:8080', origin })).toEqual(expect.objectContaining({ status: 400, body: err('Cross-origin requests are not allowed') }));
    }
    expect((await post({ host: 'relay.example:8080', origin: 'http://relay.example:8080' })).status).toBe(200);
    // host:port is compared, not the scheme (TLS may end in front of the server).
    expect((await post({ host: 'relay.example:8080', origin: 'https://relay.example:8080' })).status).toBe(200);
    expect((await post({ host: 'relay.example', origin: 'https://RELAY.example' })).status).toBe(200);
    expect((await post({ host: 'relay.example:443', origin: 'https://relay.example' })).status).toBe(200);
    expect((await post({})).status).toBe(200);
    // Cross-origin is decided before the Content-Type rule.
    expect((await call(proxy, 'DELETE', '/apps/app_1', { cookie: COOKIE, origin: 'https://evil.example' })).body).toEqual(err('Cross-origin requests are not allowed'));
    expect((await call(proxy, 'PUT', '/app-messengers/am_1', { ...JSON_CT, origin: 'null' }, '{}')).status).toBe(400);
    expect((await call(proxy, 'GET', '/apps', { cookie: COOKIE, origin: 'https://evil.example' })).status).toBe(200);
  });

  it('DELETE and PUT without Content-Type: application/json answer 403', async () => {
    const forbidden = { status: 403, body: err('Content-Type must be application/json') };
    expect(await call(proxy, 'DELETE', '/apps/app_1', { cookie: COOKIE })).toMatchObject(forbidden);
    expect(await call(proxy, 'DELETE', '/credentials/cred_1', { cookie: COOKIE, 'content-type': 'text/plain' })).toMatchObject(forbidden);
    expect(await call(proxy, 'PUT', '/app-messengers/am_1', { cookie: COOKIE }, '{"status":"disabled"}')).toMatchObject(forbidden);
    expect(await call(proxy, 'PUT', '/app-messengers/am_1', { cookie: COOKIE, 'content-type': 'application/jsonx' }, '{}')).toMatchObject(forbidden);
    const deleted = await call(proxy, 'DELETE', '/apps/app_1', { cookie: COOKIE, 'content-type': 'Application/JSON; Charset=UTF-8' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ method: 'DELETE', url: `${PREFIX}/apps/app_1`, body: null });
    expect(deleted.body.headers['content-type']).toBeUndefined();
    const put = await call(proxy, 'PUT', '/app-messengers/am_1', { cookie: COOKIE, ...JSON_CT }, '{"status":"disabled"}');
    expect(put.body).toMatchObject({ method: 'PUT', body: '{"status":"disabled"}' });
  });

  it('POST bodies must be JSON (400); an empty POST passes with or without a content type', async () => {
    const wrongType = { status: 400, body: err('Content-Type must be application/json') };
    for (const type of ['text/plain', 'multipart/form-data', 'application/x-www-form-urlencoded', ';;;']) {
      expect(await call(proxy, 'POST', '/user', { cookie: COOKIE, 'content-type': type }, '{"name":"x"}')).toMatchObject(wrongType);
    }
    const noType = await proxy.inject({ method: 'POST', url: `${PREFIX}/user`, headers: { cookie: COOKIE }, payload: Buffer.from('{"name":"x"}') });
    expect([noType.statusCode, noType.json()]).toEqual([400, err('Content-Type must be application/json')]);
    for (const bad of ['{', '{"name":', 'name=x', '\u0000', ' ']) {
      expect(await call(proxy, 'POST', '/user', { cookie: COOKIE, ...JSON_CT }, bad)).toMatchObject({ status: 400, body: err('Invalid JSON') });
    }
    expect(await call(proxy, 'PUT', '/app-messengers/am_1', { cookie: COOKIE, ...JSON_CT }, '{oops}')).toMatchObject({ status: 400, body: err('Invalid JSON') });
    for (const headers of [{}, JSON_CT, { 'content-type': 'text/plain' }]) {
      const res = await call(proxy, 'POST', '/recovery-code', { cookie: COOKIE, ...headers });
      expect(res).toMatchObject({ status: 200, body: { method: 'POST', url: `${PREFIX}/recovery-code`, body: null } });
      expect(res.body.headers['content-type']).toBeUndefined();
    }
    expect(await call(proxy, 'POST', '/invoices/inv_1/cancel', { cookie: COOKIE, ...JSON_CT }, '{}')).toMatchObject({ status: 200, body: { body: '{}' } });
  });

  it('400 "Session token is required" without the cookie; /configuration is forwarded without one', async () => {
    const seen = await hitsDuring(async () => {
      const sessionless: Array<Record<string, string>> = [
        {},
        { cookie: '' },
        { cookie: 'relay_session=' },
        { cookie: 'theme=dark' },
        { 'x-session-token': TOKEN },
        { cookie: 'relay_session=%E2%98%83' },
      ];
      for (const headers of sessionless) {
        expect(await call(proxy, 'GET', '/apps', headers)).toMatchObject({ status: 400, body: err('Session token is required') });
      }
      expect(await call(proxy, 'POST', '/invoices', JSON_CT, '{"asset":"BTC","planId":"paid"}')).toMatchObject({ status: 400, body: err('Session token is required') });
    });
    expect(seen).toEqual([]);
    const config = await call(proxy, 'GET', '/configuration');
    expect(config).toMatchObject({ status: 200, body: { method: 'GET', url: `${PREFIX}/configuration` } });
    expect(config.body.headers['x-session-token']).toBeUndefined();
    const withCookie = await call(proxy, 'GET', '/configuration', { cookie: COOKIE, 'x-session-token': 'forged' });
    expect(withCookie.body.headers['x-session-token']).toBeUndefined();
    expect(withCookie.body.headers.cookie).toBeUndefined();
  });

  it('forwards a backend JSON error with its status; a non-JSON error becomes "Backend request failed (<status>)"', async () => {
    expect(await call(proxy, 'GET', '/invoices/bad-request', { cookie: COOKIE })).toMatchObject({ status: 400, body: err('Invoice not found') });
    const boom = await call(proxy, 'GET', '/invoices/boom/payment-status', { cookie: COOKIE });
    expect([boom.status, boom.body, boom.headers['content-type']]).toEqual([500, err('Backend request failed (500)'), 'application/json; charset=utf-8']);
    // A 2xx that is not JSON cannot be passed on as JSON: a bad gateway.
    expect(await call(proxy, 'GET', '/invoices/text', { cookie: COOKIE })).toMatchObject({ status: 502, body: err('Backend request failed (200)') });
  });

  it('504 "Backend request timed out" when the backend does not answer within timeoutMs', async () => {
    const impatient = await buildProxy(forward, { timeoutMs: 200 });
    try {
      const began = Date.now();
      expect(await call(impatient, 'GET', '/invoices/slow', { cookie: COOKIE })).toMatchObject({ status: 504, body: err('Backend request timed out') });
      const elapsed = Date.now() - began;
      expect(elapsed).toBeGreaterThanOrEqual(190);
      expect(elapsed).toBeLessThan(900);
      expect((await call(impatient, 'GET', '/user', { cookie: COOKIE })).status).toBe(200);
    } finally {
      await impatient.close();
    }
  });
});

describe('dashboard proxy failures', () => {
  it('502 "Backend unreachable" over HTTP when nothing listens on the port', async () => {
    const port = await closedPort();
    const proxy = await buildProxy(httpForwarder(`http://127.0.0.1:${port}`));
    expect(await call(proxy, 'GET', '/apps', { cookie: COOKIE })).toMatchObject({ status: 502, body: err('Backend unreachable') });
    await proxy.close();
  });

  it('502 "Backend unreachable" in process when the backend instance is closed', async () => {
    const { backend } = buildBackend();
    await backend.ready();
    await backend.close();
    const proxy = await buildProxy(inProcessForwarder(backend));
    expect(await call(proxy, 'GET', '/apps', { cookie: COOKIE })).toMatchObject({ status: 502, body: err('Backend unreachable') });
    const refused: Forwarder = async () => {
      throw Object.assign(new Error('connect ECONNREFUSED 10.0.0.1:80'), { code: 'ECONNREFUSED' });
    };
    const viaCode = await buildProxy(refused);
    expect(await call(viaCode, 'GET', '/apps', { cookie: COOKIE })).toMatchObject({ status: 502, body: err('Backend unreachable') });
    await Promise.all([proxy.close(), viaCode.close()]);
  });

  it('500 "Internal server error" for an unexpected failure, logged without stack, token or body in the answer', async () => {
    const logs: string[] = [];
    const broken: Forwarder = async () => {
      throw new Error('secret internals');
    };
    const proxy = await buildProxy(broken, { logs });
    const res = await call(proxy, 'POST', '/user', { cookie: COOKIE, ...JSON_CT }, '{"name":"Very Private Name"}');
    expect([res.status, res.raw]).toEqual([500, JSON.stringify(err('Internal server error'))]);
    await proxy.close();
    const all = logs.join('');
    expect(all).toContain('secret internals');
    expect(all).not.toContain(TOKEN);
    expect(all).not.toContain('Very Private Name');
  });

  it("holds a client's body to the JSON bounds, not the backend's answer (a long member list)", async () => {
    const long = JSON.stringify({ members: Array.from({ length: 4_000 }, (_, i) => ({ contactId: String(i), role: 'member', status: 'joined' })) });
    const proxy = await buildProxy(async () => ({ status: 200, headers: {}, body: long }));
    const answered = await call(proxy, 'GET', '/group/members?appMessengerId=am_1', { cookie: COOKIE });
    expect(answered.status).toBe(200);
    expect(answered.body.members).toHaveLength(4_000);
    expect(await call(proxy, 'POST', '/user', { cookie: COOKIE, ...JSON_CT }, `{"name":${'['.repeat(40)}}`)).toMatchObject({
      status: 400,
      body: err('Invalid JSON: nested deeper than 32 levels'),
    });
    await proxy.close();
  });

  it('413 in the proxy’s shape for a body over the limit', async () => {
    const proxy = await buildProxy(async () => ({ status: 200, headers: {}, body: '{}' }), { bodyLimit: 64 });
    expect(await call(proxy, 'POST', '/user', { cookie: COOKIE, ...JSON_CT }, JSON.stringify({ name: 'x'.repeat(100) }))).toMatchObject({
      status: 413,
      body: err('Request body too large'),
    });
    await proxy.close();
  });

  it('the in-process forwarder settles as soon as the signal aborts', async () => {
    const { backend } = buildBackend();
    await backend.ready();
    const controller = new AbortController();
    const pending = inProcessForwarder(backend)({ method: 'GET', path: `${PREFIX}/invoices/slow`, headers: {} }, controller.signal);
    setTimeout(() => controller.abort(new Error('stop')), 20);
    await expect(pending).rejects.toThrow('stop');
    await backend.close();
  });

  it('the HTTP forwarder reports a refused connection as BackendUnreachableError', async () => {
    const port = await closedPort();
    await expect(httpForwarder(`http://127.0.0.1:${port}`)({ method: 'GET', path: '/x', headers: {} }, new AbortController().signal)).rejects.toBeInstanceOf(
      BackendUnreachableError,
    );
  });
});

describe('dashboard allowlist', () => {
  it('holds exactly the interface’s routes; only /configuration needs no session', () => {
    expect(DASHBOARD_ROUTES).toHaveLength(26);
    expect(DASHBOARD_ROUTES.filter((r) => !r.session).map((r) => `${r.method} ${r.pattern}`)).toEqual(['GET /configuration']);
    for (const route of DASHBOARD_ROUTES) {
      const concrete = route.pattern.replace(/:[A-Za-z]+/g, 'x_1');
      expect(matchRoute(route.method, concrete)?.route).toBe(route);
    }
  });

  it('matches one segment per parameter and decodes it', () => {
    expect(matchRoute('GET', '/invoices/inv%201/payment-status')).toEqual({
      route: { method: 'GET', pattern: '/invoices/:invoiceId/payment-status', session: true },
      params: { invoiceId: 'inv 1' },
    });
    expect(matchRoute('POST', '/apps/update')?.route.pattern).toBe('/apps/update');
    expect(matchRoute('DELETE', '/apps/update')?.params).toEqual({ appId: 'update' });
    expect(matchRoute('GET', '/invoices//payment-status')).toBeUndefined();
    expect(matchRoute('HEAD', '/apps')).toBeUndefined();
    expect(matchRoute('GET', 'apps')).toBeUndefined();
  });
});
