import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, DASHBOARD, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

/**
 * The second outside review's findings (issue 23), each as the reviewer reproduced it, against a
 * running Relay on its embedded default.
 */
let relay: RelayProcess;
let account: Account;
let appId: string;
let key: string;
beforeAll(async () => {
  relay = await startRelayProcess();
  account = await createAccount(relay);
  appId = (await createApp(relay, account, ['signal'])).appId;
  key = (await createKey(relay, account, [appId])).secret;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

const post = async (path: string, body: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${relay.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  return { status: res.status, body: (await res.json()) as unknown };
};

describe('1. deeply nested JSON', () => {
  const nested = '['.repeat(1_000_000); // the review's body: 1 MB, under the 2 MiB cap
  const closed = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

  it('a send without a key is refused before its body is parsed: 401, not a parse of a million levels', async () => {
    expect(await post('/api/v1/messages/send', nested)).toEqual({ status: 401, body: { error: 'Missing API key' } });
    expect(await post('/api/v1/messages/send', nested, { authorization: 'Bearer rly_nobody' })).toEqual({ status: 403, body: { error: 'Invalid API key' } });
  });

  it('with a key, a body nested deeper than 32 levels or holding over 10,000 values is a 400 in the public shape', async () => {
    const auth = { authorization: `Bearer ${key}` };
    expect(await post('/api/v1/messages/send', nested, auth)).toEqual({ status: 400, body: { error: 'Invalid JSON: nested deeper than 32 levels' } });
    expect(await post('/api/v1/messages/send', `{"messages":${closed(40)}}`, auth)).toEqual({ status: 400, body: { error: 'Invalid JSON: nested deeper than 32 levels' } });
    const many = `{"messages":[${Array.from({ length: 10_001 }, () => '0').join(',')}]}`;
    expect(await post('/api/v1/messages/send', many, auth)).toEqual({ status: 400, body: { error: 'Invalid JSON: more than 10000 values' } });
    // Nesting inside strings is text, not nesting.
    const message = { appId, messenger: 'signal', contactId: '+15550001', message: `${'['.repeat(5000)}"{` };
    const ok = await post('/api/v1/messages/send', JSON.stringify({ messages: [message] }), auth);
    expect(ok.status).toBe(202);
  });

  it('the dashboard routes refuse it in their shape, signed in or not', async () => {
    const refused = { status: 400, body: { success: false, error: 'Invalid JSON: nested deeper than 32 levels' } };
    const deep = '['.repeat(200_000); // under the dashboard's 256 KiB
    expect(await post('/dashboard/auth/email', deep)).toEqual(refused);
    expect(await post(`${DASHBOARD}/apps`, closed(100), { cookie: account.cookie })).toEqual(refused);
    expect(await post(`${DASHBOARD}/apps`, deep)).toEqual(refused);
    // The review's million levels are over the dashboard's body limit: refused unread.
    expect(await post('/dashboard/auth/email', nested)).toEqual({ status: 413, body: { success: false, error: 'Request body too large' } });
  });

  it('a dashboard body over 256 KiB is refused before it is parsed (413)', async () => {
    expect(await post('/dashboard/auth/email', JSON.stringify({ email: 'a@example.com', pad: 'x'.repeat(300 * 1024) }))).toEqual({
      status: 413,
      body: { success: false, error: 'Request body too large' },
    });
  });
});
