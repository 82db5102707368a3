import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, DASHBOARD, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { freePort, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) {
    await relay.stop();
    await relay.cleanup();
  }
});

const raw = async (relay: RelayProcess, method: string, route: string, headers: Record<string, string> = {}, body?: string) => {
  const res = await fetch(`${relay.url}${DASHBOARD}${route}`, { method, headers, ...(body !== undefined ? { body } : {}) });
  return { status: res.status, body: (await res.json()) as any };
};

describe('dashboard proxy and account API (one process)', () => {
  let relay: RelayProcess;
  let account: Account;
  beforeAll(async () => {
    relay = await startRelayProcess();
    started.push(relay);
    account = await createAccount(relay, 'owner@example.com');
  });

  it('GET /user shows the session’s user; POST /user renames, and 400 without a name', async () => {
    expect(await dashboard(relay, account, 'GET', '/user')).toEqual({
      status: 200,
      body: { id: expect.stringMatching(/^usr_[0-9a-f]{24}$/), name: 'owner', email: 'owner@example.com' },
    });
    const renamed = await dashboard(relay, account, 'POST', '/user', { name: 'Olga' });
    expect(renamed).toEqual({ status: 200, body: { id: expect.any(String), name: 'Olga', email: 'owner@example.com' } });
    expect(await dashboard(relay, account, 'POST', '/user', {})).toEqual({ status: 400, body: { success: false, error: 'Missing required field: name' } });
  });

  it('400 "Session token is required" without a cookie or with an unknown one; /configuration needs none', async () => {
    expect(await raw(relay, 'GET', '/apps')).toEqual({ status: 400, body: { success: false, error: 'Session token is required' } });
    expect(await raw(relay, 'GET', '/apps', { cookie: 'relay_session=rls_forged' })).toEqual({
      status: 400,
      body: { success: false, error: 'Session token is required' },
    });
    // A token sent straight as the header is ignored: only the proxy sets it, from the cookie.
    expect(await raw(relay, 'GET', '/apps', { 'x-session-token': account.session })).toEqual({
      status: 400,
      body: { success: false, error: 'Session token is required' },
    });
    const config = await raw(relay, 'GET', '/configuration');
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({ success: true, data: { currency: 'USD', assets: [], plans: [{ id: 'free' }, { id: 'paid-monthly' }, { id: 'paid-annual' }] } });
  });

  it('404 off the allowlist: unknown paths, the public API under the prefix, server-rendered pages', async () => {
    for (const path of ['/nope', '/api/v1/messages/send', '/statistics', '/realtime-statistics', '/main', '/metrics/app_1']) {
      expect(await raw(relay, 'GET', path, { cookie: account.cookie })).toEqual({ status: 404, body: { success: false, error: 'Not found' } });
    }
    expect(await raw(relay, 'PATCH', '/apps', { cookie: account.cookie })).toEqual({ status: 404, body: { success: false, error: 'Not found' } });
  });

  it('mutations must be same-origin (a missing Origin is allowed)', async () => {
    const body = JSON.stringify({ name: 'Cross' });
    const json = { cookie: account.cookie, 'content-type': 'application/json' };
    expect(await raw(relay, 'POST', '/user', { ...json, origin: 'https://evil.example' }, body)).toEqual({
      status: 400,
      body: { success: false, error: 'Cross-origin requests are not allowed' },
    });
    expect((await raw(relay, 'POST', '/user', { ...json, origin: relay.url }, body)).status).toBe(200);
    expect((await raw(relay, 'POST', '/user', json, body)).status).toBe(200);
  });

  it('DELETE and PUT need Content-Type: application/json (403)', async () => {
    const { appId, messengers } = await createApp(relay, account, ['signal'], 'CT');
    expect(await raw(relay, 'DELETE', `/apps/${appId}`, { cookie: account.cookie })).toEqual({
      status: 403,
      body: { success: false, error: 'Content-Type must be application/json' },
    });
    expect(await raw(relay, 'PUT', `/app-messengers/${messengers[0]!.id}`, { cookie: account.cookie }, JSON.stringify({ status: 'disabled' }))).toEqual({
      status: 403,
      body: { success: false, error: 'Content-Type must be application/json' },
    });
    expect((await dashboard(relay, account, 'DELETE', `/apps/${appId}`)).status).toBe(200);
  });

  it('apps: create (processing, then active with a bot identity), list, update, delete', async () => {
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Helpdesk', protocol: ['signal', 'session'] });
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      id: expect.stringMatching(/^app_[0-9a-f]{24}$/),
      name: 'Helpdesk',
      protocol: ['signal', 'session'],
      status: 'active',
      deliveryType: 'poll',
      webhookUrl: null,
      webhookAuthType: null,
      webhookAuthHeaderName: null,
      apiKeyId: null,
      userId: expect.stringMatching(/^usr_/),
      createdAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // Processing until the provisioner (in the delivery pipeline's thread) gave each its bot
    // identity; that thread may already have done so by the time the answer is built.
    expect(created.body.messengers.map((m: any) => m.messenger)).toEqual(['signal', 'session']);
    for (const m of created.body.messengers) {
      if (m.status === 'processing') expect(m.address).toBeNull();
      else expect(m).toMatchObject({ status: 'active', address: expect.any(String) });
    }
    const appId = created.body.id as string;
    const active = await waitFor(async () => {
      const list = await dashboard(relay, account, 'GET', '/apps');
      const app = list.body.items.find((a: any) => a.id === appId);
      return app.messengers.every((m: any) => m.status === 'active') ? app : undefined;
    });
    expect(active.messengers[0].address).toMatch(/^\+1555\d{7}$/);
    expect(active.messengers[1].address).toMatch(/^05[0-9a-f]{64}$/);

    const updated = await dashboard(relay, account, 'POST', '/apps/update', {
      appId,
      webhookUrl: 'https://hooks.example.com/relay',
      webhookAuthType: 'bearer',
      webhookAuthSecret: 's3cret',
      deliveryType: 'webhook',
    });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ id: appId, webhookUrl: 'https://hooks.example.com/relay', webhookAuthType: 'bearer', deliveryType: 'webhook', hasWebhookAuthSecret: true });
    expect(JSON.stringify(updated.body)).not.toContain('s3cret');
    expect(await dashboard(relay, account, 'POST', '/apps/update', { webhookUrl: 'https://x.example' })).toEqual({
      status: 400,
      body: { success: false, error: 'Missing required field: appId' },
    });

    expect(await dashboard(relay, account, 'POST', '/apps', { protocol: ['signal'] })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: name' } });
    expect(await dashboard(relay, account, 'POST', '/apps', { name: 'x' })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: protocol' } });
    expect(await dashboard(relay, account, 'POST', '/apps', { name: 'x', protocol: ['telegram'] })).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid protocol. Must be an array of: signal, simplex, session' },
    });

    expect(await dashboard(relay, account, 'DELETE', `/apps/${appId}`)).toEqual({ status: 200, body: { success: true, data: { id: appId, deleted: true } } });
    expect(await dashboard(relay, account, 'DELETE', `/apps/${appId}`)).toEqual({ status: 400, body: { success: false, error: 'App not found' } });
  });

  it('app-messenger status accepts only active or disabled', async () => {
    const { messengers } = await createApp(relay, account, ['simplex'], 'Status');
    const id = messengers[0]!.id;
    for (const status of ['enabled', 'processing']) {
      expect(await dashboard(relay, account, 'PUT', `/app-messengers/${id}`, { status })).toEqual({
        status: 400,
        body: { success: false, error: 'Invalid status. Must be one of: active, disabled' },
      });
    }
    expect((await dashboard(relay, account, 'PUT', `/app-messengers/${id}`, { status: 'disabled' })).body.status).toBe('disabled');
    expect(await dashboard(relay, account, 'PUT', `/app-messengers/am_unknown`, { status: 'active' })).toEqual({
      status: 400,
      body: { success: false, error: 'App messenger not found' },
    });
  });

  it('credentials: the secret is shown at creation and in the full list only', async () => {
    const { appId } = await createApp(relay, account, ['signal'], 'Keys');
    const created = await dashboard(relay, account, 'POST', '/credentials', { type: 'api-key', appIds: [appId], name: 'CI bot' });
    expect(created.status).toBe(200);
    expect(created.body).toEqual({
      credentialId: expect.stringMatching(/^cred_[0-9a-f]{24}$/),
      type: 'api-key',
      name: 'CI bot',
      appIds: [appId],
      keyPreview: `${created.body.secret.slice(0, 8)}…`,
      webhookUrl: null,
      webhookAuthType: null,
      webhookAuthHeaderName: null,
      createdAt: expect.any(String),
      secret: expect.stringMatching(/^rly_[A-Za-z0-9_-]{43}$/),
    });
    const list = await dashboard(relay, account, 'GET', '/credentials');
    const listed = list.body.items.find((c: any) => c.credentialId === created.body.credentialId);
    expect(listed).toBeDefined();
    expect(listed.secret).toBeUndefined();
    expect(JSON.stringify(list.body)).not.toContain(created.body.secret);
    const full = await dashboard(relay, account, 'GET', '/credentials-full');
    expect(full.body.items.find((c: any) => c.credentialId === created.body.credentialId).secret).toBe(created.body.secret);

    expect(await dashboard(relay, account, 'POST', '/credentials', { appIds: [appId], name: 'x' })).toEqual({
      status: 400,
      body: { success: false, error: 'Missing required field: type' },
    });
    expect(await dashboard(relay, account, 'POST', '/credentials', { type: 'password', appIds: [appId], name: 'x' })).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid credential type. Must be one of: api-key, webhook-bearer, webhook-header' },
    });
    expect(await dashboard(relay, account, 'POST', '/credentials', { type: 'api-key', appIds: ['app_someone_else'], name: 'x' })).toEqual({
      status: 400,
      body: { success: false, error: 'Unknown appId: app_someone_else' },
    });
  });

  it('a user sees and changes only their own apps and credentials', async () => {
    const mine = await createApp(relay, account, ['signal'], 'Mine');
    const myKey = await createKey(relay, account, [mine.appId]);
    const other = await createAccount(relay, 'other@example.com');
    expect((await dashboard(relay, other, 'GET', '/apps')).body).toEqual({ items: [] });
    expect((await dashboard(relay, other, 'GET', '/credentials')).body).toEqual({ items: [] });
    expect((await dashboard(relay, other, 'DELETE', `/apps/${mine.appId}`)).status).toBe(400);
    expect((await dashboard(relay, other, 'DELETE', `/credentials/${myKey.credentialId}`)).status).toBe(400);
    expect((await dashboard(relay, other, 'POST', '/apps/update', { appId: mine.appId, name: 'Hijacked' })).status).toBe(400);
    expect((await dashboard(relay, other, 'PUT', `/app-messengers/${mine.messengers[0]!.id}`, { status: 'disabled' })).status).toBe(400);
    expect((await dashboard(relay, other, 'POST', '/credentials', { type: 'api-key', appIds: [mine.appId], name: 'steal' })).status).toBe(400);
    expect((await api(relay, 'GET', '/auth/verify', { key: myKey.secret })).status).toBe(200);
  });
});

describe('dashboard proxy in front of a separate account backend', () => {
  it('forwards over HTTP to an account process on the same data', async () => {
    const backend = await startRelayProcess({ role: 'account', waitFor: 'port' });
    started.push(backend);
    const front = await startRelayProcess({ role: 'api', dataDir: backend.dataDir, env: { DASHBOARD_BACKEND_URL: backend.url } });
    started.push(front);
    const account = await createAccount(front, 'split@example.com');
    expect(await dashboard(front, account, 'GET', '/user')).toMatchObject({ status: 200, body: { email: 'split@example.com' } });
    const created = await dashboard(front, account, 'POST', '/apps', { name: 'Split', protocol: ['signal'] });
    expect(created.status).toBe(200);
    expect(await dashboard(front, account, 'POST', '/apps', { name: '' })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: name' } });
  });

  it('502 when the backend is unreachable', async () => {
    const closedPort = await freePort();
    const front = await startRelayProcess({ role: 'api', env: { DASHBOARD_BACKEND_URL: `http://127.0.0.1:${closedPort}` } });
    started.push(front);
    const account = await createAccount(front);
    expect(await dashboard(front, account, 'GET', '/apps')).toEqual({ status: 502, body: { success: false, error: 'Backend unreachable' } });
  });

  it('504 when the backend takes longer than 8 seconds; a non-JSON error becomes "Backend request failed (<status>)"', async () => {
    const slow = http.createServer((req, res) => {
      if (req.url?.includes('/credentials')) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end('boom');
        return;
      }
      setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'), 9_000).unref();
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const port = (slow.address() as { port: number }).port;
      const front = await startRelayProcess({ role: 'api', env: { DASHBOARD_BACKEND_URL: `http://127.0.0.1:${port}` } });
      started.push(front);
      const account = await createAccount(front);
      const began = Date.now();
      expect(await dashboard(front, account, 'GET', '/apps')).toEqual({ status: 504, body: { success: false, error: 'Backend request timed out' } });
      const elapsed = Date.now() - began;
      expect(elapsed).toBeGreaterThanOrEqual(7_900);
      expect(elapsed).toBeLessThan(9_000);
      expect(await dashboard(front, account, 'GET', '/credentials')).toEqual({ status: 500, body: { success: false, error: 'Backend request failed (500)' } });
    } finally {
      slow.closeAllConnections();
      slow.close();
    }
  });
});
