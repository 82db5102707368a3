import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

/** Revocation and isolation that hold: what one tenant does never changes another's answers, and an end is effective at once. */
let relay: RelayProcess;

beforeAll(async () => {
  relay = await startRelayProcess();
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

describe('a webhook-header credential of one tenant', () => {
  it('does not turn other clients’ ordinary headers into keys', async () => {
    const tenant = await createAccount(relay);
    const appId = (await createApp(relay, tenant, ['signal'])).appId;
    const hook = await createKey(relay, tenant, [appId], 'webhook-header', { webhookUrl: 'https://hooks.example.com/', webhookAuthHeaderName: 'X-Relay-Hook' });
    // A client of anyone, without a key, that happens to send the header with its own value.
    const noKey = await api(relay, 'GET', '/messages/poll', { headers: { 'x-relay-hook': 'something else', 'user-agent': 'curl/8.5' } });
    expect(noKey.status).toBe(401);
    expect(noKey.body).toEqual({ error: 'Missing API key' });
    const withKey = await api(relay, 'GET', '/auth/verify', { headers: { 'x-relay-hook': hook.secret } });
    expect(withKey).toMatchObject({ status: 200, body: { valid: true, appIds: [appId] } });
  });
});

const auth = async (account: Account | undefined, method: string, route: string, body?: unknown) => {
  const res = await fetch(`${relay.url}/dashboard/auth${route}`, {
    method,
    headers: {
      ...(account ? { cookie: account.cookie } : {}),
      ...(body !== undefined || method === 'DELETE' ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, cookie: res.headers.get('set-cookie'), body: (await res.json()) as any };
};

describe('dashboard sessions end', () => {
  it('a user signs out of this session; the cookie is cleared and refused from then on', async () => {
    const account = await createAccount(relay);
    expect((await dashboard(relay, account, 'GET', '/credentials-full')).status).toBe(200);
    const out = await auth(account, 'POST', '/logout');
    expect(out).toEqual({ status: 200, cookie: 'relay_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax', body: { success: true, data: { ended: 1 } } });
    expect(await dashboard(relay, account, 'GET', '/credentials-full')).toEqual({ status: 400, body: { success: false, error: 'Session token is required' } });
    expect(await auth(account, 'POST', '/logout')).toMatchObject({ status: 400, body: { success: false, error: 'Session token is required' } });
    expect(await auth(undefined, 'GET', '/sessions')).toMatchObject({ status: 400, body: { success: false, error: 'Session token is required' } });
  });

  it('a user sees their sessions, ends another one, or all of them', async () => {
    const email = `many-${Date.now()}@example.com`;
    const [a, b, c] = [await createAccount(relay, email), await createAccount(relay, email), await createAccount(relay, email)];
    const listed = await auth(a, 'GET', '/sessions');
    expect(listed.status).toBe(200);
    expect(listed.body.items).toHaveLength(3);
    expect(listed.body.items.filter((s: { current: boolean }) => s.current)).toHaveLength(1);
    const other = listed.body.items.find((s: { current: boolean }) => !s.current).sessionId as string;
    expect(await auth(a, 'DELETE', `/sessions/${other}`)).toMatchObject({ status: 200, body: { success: true, data: { sessionId: other, ended: true } } });
    expect(await auth(a, 'DELETE', '/sessions/not-a-session')).toMatchObject({ status: 400, body: { success: false, error: 'Session not found' } });
    const statuses = await Promise.all([a, b, c].map(async (account) => (await dashboard(relay, account, 'GET', '/user')).status));
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(await auth(a, 'POST', '/logout', { all: true })).toMatchObject({ status: 200, body: { success: true, data: { ended: 2 } } });
    for (const account of [a, b, c]) expect((await dashboard(relay, account, 'GET', '/user')).status).toBe(400);
  });

  it('keeps the proxy’s rules: same origin for mutations, JSON for DELETE, nothing off its list', async () => {
    const account = await createAccount(relay);
    const crossOrigin = await fetch(`${relay.url}/dashboard/auth/logout`, { method: 'POST', headers: { cookie: account.cookie, origin: 'https://evil.example' } });
    expect(crossOrigin.status).toBe(400);
    expect(await crossOrigin.json()).toEqual({ success: false, error: 'Cross-origin requests are not allowed' });
    const noJson = await fetch(`${relay.url}/dashboard/auth/sessions/x`, { method: 'DELETE', headers: { cookie: account.cookie } });
    expect(noJson.status).toBe(403);
    await noJson.arrayBuffer();
    const off = await fetch(`${relay.url}/dashboard/auth/elsewhere`, { headers: { cookie: account.cookie } });
    expect(off.status).toBe(404);
    expect(await off.json()).toEqual({ success: false, error: 'Not found' });
    expect((await dashboard(relay, account, 'GET', '/user')).status).toBe(200);
  });

  it('relay session revoke ends every session of a user at once; another user keeps theirs', async () => {
    const email = `revoked-${Date.now()}@example.com`;
    const first = await createAccount(relay, email);
    const second = await createAccount(relay, email);
    const bystander = await createAccount(relay);
    expect((await dashboard(relay, first, 'GET', '/credentials-full')).status).toBe(200);
    const listed = await relay.cli(['session', 'list', '--email', email]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(2);
    const revoked = await relay.cli(['session', 'revoke', '--email', email]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout.trim()).toBe('2');
    // The CLI is another process: the server sees its commit within its look at the store's file (at most 250 ms when quiet, docs/status.md).
    for (const account of [first, second])
      await vi.waitFor(async () => expect(await dashboard(relay, account, 'GET', '/credentials-full')).toEqual({ status: 400, body: { success: false, error: 'Session token is required' } }), { timeout: 2_000, interval: 25 });
    expect((await dashboard(relay, bystander, 'GET', '/credentials-full')).status).toBe(200);
    const events = await relay.cli(['events', '--type', 'SessionEnded']);
    const ended = events.stdout.trim().split('\n').map((line) => JSON.parse(line) as { data: { reason: string } });
    expect(ended.filter((e) => e.data.reason === 'revoked')).toHaveLength(2);
  });

  it('relay session revoke --session ends that one only', async () => {
    const email = `one-${Date.now()}@example.com`;
    const keep = await createAccount(relay, email);
    const end = await createAccount(relay, email);
    const sessions = (await relay.cli(['session', 'list', '--email', email])).stdout.trim().split('\n').map((l) => JSON.parse(l) as { sessionId: string });
    const newest = sessions[sessions.length - 1]!.sessionId;
    const revoked = await relay.cli(['session', 'revoke', '--email', email, '--session', newest]);
    expect(revoked.stdout.trim()).toBe('1');
    await vi.waitFor(async () => expect((await dashboard(relay, end, 'GET', '/user')).status).toBe(400), { timeout: 2_000, interval: 25 });
    expect((await dashboard(relay, keep, 'GET', '/user')).status).toBe(200);
  });
});

