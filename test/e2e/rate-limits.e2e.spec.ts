import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) {
    await relay.stop();
    await relay.cleanup();
  }
});

const setup = async (env: Record<string, string>) => {
  const relay = await startRelayProcess({ env });
  started.push(relay);
  const email = `limits-${Math.random().toString(36).slice(2)}@example.com`;
  const account = await createAccount(relay, email);
  const { appId } = await createApp(relay, account, ['signal']);
  return { relay, account, appId, email };
};

const batch = (appId: string, n: number) => ({ messages: Array.from({ length: n }, (_, i) => ({ appId, contactId: '+15550001', messenger: 'signal', message: `m${i}` })) });

describe('rate limits (Limits section of the interface)', () => {
  let relay: RelayProcess;
  let account: Account;
  let appId: string;
  let email: string;
  beforeAll(async () => {
    ({ relay, account, appId, email } = await setup({
      RATE_LIMIT_POLL_PER_MIN: '3',
      RATE_LIMIT_SEND_FREE_PER_MIN: '5',
      RATE_LIMIT_SEND_PAID_PER_MIN: '8',
      RATE_LIMIT_VERIFY_PER_MIN: '2',
    }));
  });

  it('send counts messages; a batch over the remaining budget is rejected whole and takes nothing', async () => {
    const { secret } = await createKey(relay, account, [appId]);
    const before = Date.now();
    const first = await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 3) });
    expect(first.status).toBe(202);
    expect(first.headers.get('x-ratelimit-remaining')).toBe('2');
    const over = await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 3) });
    expect(over.status).toBe(429);
    expect(over.body).toEqual({ error: 'Rate limit exceeded' });
    expect(over.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(over.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(before + 60_000 - 50);
    expect(reset).toBeLessThanOrEqual(Date.now() + 60_000);
    const fits = await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 2) });
    expect(fits.status).toBe(202);
    expect(fits.headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 1) })).status).toBe(429);
  });

  it('a send rejected before enqueue (400) consumes nothing', async () => {
    const { secret } = await createKey(relay, account, [appId]);
    expect((await api(relay, 'POST', '/messages/send', { key: secret, body: { messages: [] } })).status).toBe(400);
    expect((await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 51) })).status).toBe(400);
    const ok = await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 1) });
    expect(ok.headers.get('x-ratelimit-remaining')).toBe('4');
  });

  it('poll and send have separate buckets; poll takes one unit per request whatever the limit or result', async () => {
    const { secret } = await createKey(relay, account, [appId]);
    expect((await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 5) })).status).toBe(202);
    const remaining: Array<string | null> = [];
    for (const limit of [1, 50, 10]) {
      const res = await api(relay, 'GET', `/messages/poll?limit=${limit}`, { key: secret });
      expect(res.status).toBe(200);
      remaining.push(res.headers.get('x-ratelimit-remaining'));
    }
    expect(remaining).toEqual(['2', '1', '0']);
    const limited = await api(relay, 'GET', '/messages/poll', { key: secret });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(limited.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now());
  });

  it('budgets belong to the credential: another key of the same user has its own', async () => {
    const a = await createKey(relay, account, [appId]);
    const b = await createKey(relay, account, [appId]);
    expect((await api(relay, 'POST', '/messages/send', { key: a.secret, body: batch(appId, 5) })).headers.get('x-ratelimit-remaining')).toBe('0');
    expect((await api(relay, 'POST', '/messages/send', { key: b.secret, body: batch(appId, 1) })).headers.get('x-ratelimit-remaining')).toBe('4');
  });

  it('verify is limited too', async () => {
    const { secret } = await createKey(relay, account, [appId]);
    expect((await api(relay, 'GET', '/auth/verify', { key: secret })).status).toBe(200);
    expect((await api(relay, 'GET', '/auth/verify', { key: secret })).status).toBe(200);
    const limited = await api(relay, 'GET', '/auth/verify', { key: secret });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('x-ratelimit-remaining')).toBe('0');
  });

  it('health is never limited', async () => {
    for (let i = 0; i < 10; i++) expect((await api(relay, 'GET', '/health')).status).toBe(200);
  });

  it('a user on the paid tier gets the paid send limit', async () => {
    const tier = await relay.cli(['user', 'tier', '--email', email, '--tier', 'paid']);
    expect(tier.code, tier.stderr).toBe(0);
    const { secret } = await createKey(relay, account, [appId]);
    // The tier change was written by another process: the server picks it up from the store.
    let remaining: string | null = null;
    for (let i = 0; i < 100; i++) {
      const probe = await createKey(relay, account, [appId]);
      const res = await api(relay, 'POST', '/messages/send', { key: probe.secret, body: batch(appId, 1) });
      remaining = res.headers.get('x-ratelimit-remaining');
      if (remaining === '7') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(remaining).toBe('7');
    const res = await api(relay, 'POST', '/messages/send', { key: secret, body: batch(appId, 8) });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});

describe('rate-limit windows', () => {
  it('a window ends RATE_LIMIT_WINDOW_MS after its first use, and the budget is whole again', async () => {
    const { relay, account, appId } = await setup({ RATE_LIMIT_POLL_PER_MIN: '1', RATE_LIMIT_WINDOW_MS: '1500' });
    const { secret } = await createKey(relay, account, [appId]);
    expect((await api(relay, 'GET', '/messages/poll', { key: secret })).status).toBe(200);
    const limited = await api(relay, 'GET', '/messages/poll', { key: secret });
    expect(limited.status).toBe(429);
    const reset = Number(limited.headers.get('x-ratelimit-reset'));
    await new Promise((r) => setTimeout(r, Math.max(0, reset - Date.now()) + 50));
    const again = await api(relay, 'GET', '/messages/poll', { key: secret });
    expect(again.status).toBe(200);
    expect(again.headers.get('x-ratelimit-remaining')).toBe('0');
  });
});
