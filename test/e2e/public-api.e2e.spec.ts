import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

let relay: RelayProcess;
let account: Account;
let appId: string;
let key: string;

beforeAll(async () => {
  relay = await startRelayProcess();
  account = await createAccount(relay);
  appId = (await createApp(relay, account)).appId;
  key = (await createKey(relay, account, [appId])).secret;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

const msg = (overrides: Record<string, unknown> = {}) => ({ appId, contactId: '+15550001', messenger: 'signal', message: 'hello', ...overrides });

describe('GET /api/v1/health', () => {
  it('answers ok with the package version, security headers and no rate-limit headers, without auth', async () => {
    const res = await api(relay, 'GET', '/health');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ status: 'ok', version: '0.1.0' });
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(res.headers.get('strict-transport-security')).toBe('max-age=15552000; includeSubDomains');
    expect(res.headers.get('x-xss-protection')).not.toBeNull();
    expect(res.headers.get('x-ratelimit-remaining')).toBeNull();
    expect(res.headers.get('x-ratelimit-reset')).toBeNull();
  });

  it('security headers are on every answer: errors, unknown routes, and URLs the router cannot decode', async () => {
    const answers = await Promise.all(['/api/v1/messages/poll', '/api/v1/nowhere', '/api/v1/%E0%A4%A', '/metrics'].map((url) => fetch(`${relay.url}${url}`)));
    expect(answers.map((res) => res.status)).toEqual([401, 404, 400, 200]);
    for (const res of answers) {
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('x-frame-options')).toBe('SAMEORIGIN');
      expect(res.headers.get('strict-transport-security')).toBe('max-age=15552000; includeSubDomains');
      expect(res.headers.get('x-xss-protection')).toBe('0');
    }
    await Promise.all(answers.map((res) => res.arrayBuffer()));
  });
});

describe('GET /api/v1/auth/verify', () => {
  it('returns the key’s appIds', async () => {
    const res = await api(relay, 'GET', '/auth/verify', { key });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ valid: true, appIds: [appId] });
  });

  it('accepts X-API-Key for an api-key credential', async () => {
    const res = await api(relay, 'GET', '/auth/verify', { headers: { 'x-api-key': key } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ valid: true, appIds: [appId] });
  });

  it('401 without a key header, with a non-bearer Authorization, and with an unknown key', async () => {
    expect(await api(relay, 'GET', '/auth/verify')).toMatchObject({ status: 401, body: { error: 'Missing API key' } });
    expect(await api(relay, 'GET', '/auth/verify', { headers: { authorization: `Basic ${key}` } })).toMatchObject({
      status: 401,
      body: { error: 'Missing API key' },
    });
    expect(await api(relay, 'GET', '/auth/verify', { key: 'rly_unknown' })).toMatchObject({ status: 401, body: { error: 'Invalid API key' } });
  });

  it('401 with a body naming the problem when the key covers no app', async () => {
    const bare = await createKey(relay, account, []);
    const res = await api(relay, 'GET', '/auth/verify', { key: bare.secret });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ error: 'API key is not associated with any apps' });
  });

  it('webhook-bearer keys work only as Bearer; webhook-header keys only in their header', async () => {
    const bearer = await createKey(relay, account, [appId], 'webhook-bearer', { webhookUrl: 'https://hooks.example.com/in' });
    expect((await api(relay, 'GET', '/auth/verify', { key: bearer.secret })).status).toBe(200);
    expect(await api(relay, 'GET', '/auth/verify', { headers: { 'x-api-key': bearer.secret } })).toMatchObject({
      status: 401,
      body: { error: 'API key not accepted in this header for its credential type' },
    });
    const header = await createKey(relay, account, [appId], 'webhook-header', {
      webhookUrl: 'https://hooks.example.com/in',
      webhookAuthHeaderName: 'X-Relay-Token',
    });
    expect(await api(relay, 'GET', '/auth/verify', { headers: { 'x-relay-token': header.secret } })).toMatchObject({
      status: 200,
      body: { valid: true, appIds: [appId] },
    });
    expect((await api(relay, 'GET', '/auth/verify', { key: header.secret })).status).toBe(401);
    expect((await api(relay, 'GET', '/auth/verify', { headers: { 'x-api-key': header.secret } })).status).toBe(401);
  });

  it('a deleted credential is refused on the very next request: 401 on verify, 403 on send and poll', async () => {
    const doomed = await createKey(relay, account, [appId]);
    expect((await api(relay, 'GET', '/auth/verify', { key: doomed.secret })).status).toBe(200);
    const deleted = await dashboard(relay, account, 'DELETE', `/credentials/${doomed.credentialId}`);
    expect(deleted.status).toBe(200);
    expect(await api(relay, 'GET', '/auth/verify', { key: doomed.secret })).toMatchObject({ status: 401, body: { error: 'Invalid API key' } });
    expect(await api(relay, 'POST', '/messages/send', { key: doomed.secret, body: { messages: [msg()] } })).toMatchObject({
      status: 403,
      body: { error: 'Invalid API key' },
    });
    expect(await api(relay, 'GET', '/messages/poll', { key: doomed.secret })).toMatchObject({ status: 403, body: { error: 'Invalid API key' } });
  });
});

describe('POST /api/v1/messages/send', () => {
  it('202 with the accepted messages, ids of 32 hex characters, and the remaining budget', async () => {
    const fresh = (await createKey(relay, account, [appId])).secret;
    const res = await api(relay, 'POST', '/messages/send', { key: fresh, body: { messages: [msg(), msg({ messenger: 'simplex', contactId: '42' })] } });
    expect(res.status).toBe(202);
    expect(res.headers.get('x-ratelimit-remaining')).toBe('598');
    expect(res.body).toEqual({
      successfulMessages: [
        { messageId: expect.stringMatching(/^[0-9a-f]{32}$/), appId, contactId: '+15550001', messenger: 'signal' },
        { messageId: expect.stringMatching(/^[0-9a-f]{32}$/), appId, contactId: '42', messenger: 'simplex' },
      ],
      failedMessages: [],
      totalAccepted: 2,
      totalFailed: 0,
    });
    expect(res.body.successfulMessages[0].messageId).not.toBe(res.body.successfulMessages[1].messageId);
  });

  it('validates each item on its own: failed items are listed with the interface’s error strings', async () => {
    const res = await api(relay, 'POST', '/messages/send', {
      key,
      body: {
        messages: [
          msg(),
          msg({ appId: '' }),
          msg({ contactId: '' }),
          msg({ message: '   ' }),
          msg({ message: 'x'.repeat(10_001) }),
          msg({ messenger: 'telegram' }),
          msg({ appId: 'app_not_mine' }),
          { contactId: '+1', messenger: 'signal', message: 'no app' },
        ],
      },
    });
    expect(res.status).toBe(202);
    expect(res.body.totalAccepted).toBe(1);
    expect(res.body.totalFailed).toBe(7);
    expect(res.body.failedMessages).toEqual([
      { appId: '', contactId: '+15550001', messenger: 'signal', error: 'Missing required field: appId' },
      { appId, contactId: '', messenger: 'signal', error: 'Missing required field: contactId' },
      { appId, contactId: '+15550001', messenger: 'signal', error: 'Missing required field: message' },
      { appId, contactId: '+15550001', messenger: 'signal', error: 'Message exceeds 10000 character limit' },
      { appId, contactId: '+15550001', messenger: 'telegram', error: 'Invalid messenger. Must be one of: signal, simplex, session' },
      { appId: 'app_not_mine', contactId: '+15550001', messenger: 'signal', error: 'AppId not associated with this API key' },
      { appId: '', contactId: '+1', messenger: 'signal', error: 'Missing required field: appId' },
    ]);
  });

  it('400 when no item of the batch is valid, listing why', async () => {
    const res = await api(relay, 'POST', '/messages/send', { key, body: { messages: [msg({ message: '' })] } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      error: 'No valid messages to send',
      successfulMessages: [],
      failedMessages: [{ appId, contactId: '+15550001', messenger: 'signal', error: 'Missing required field: message' }],
      totalAccepted: 0,
      totalFailed: 1,
    });
  });

  it('400 for the batch rules', async () => {
    const send = (body: unknown, rawBody?: string) =>
      api(relay, 'POST', '/messages/send', rawBody !== undefined ? { key, rawBody } : { key, body });
    expect(await send({ messages: [] })).toMatchObject({ status: 400, body: { error: 'At least one message is required' } });
    expect(await send({ messages: Array.from({ length: 51 }, () => msg()) })).toMatchObject({
      status: 400,
      body: { error: 'Batch size exceeds maximum of 50 messages' },
    });
    expect(await send([msg()])).toMatchObject({ status: 400, body: { error: 'Request body must be a JSON object with a messages array' } });
    expect(await send(msg())).toMatchObject({ status: 400, body: { error: 'Request body must be a JSON object with a messages array' } });
    expect(await send({ messages: 'hi' })).toMatchObject({ status: 400, body: { error: 'Request body must be a JSON object with a messages array' } });
    expect(await send(undefined, '{"messages": [')).toMatchObject({ status: 400, body: { error: 'Invalid JSON' } });
    expect(await send({ messages: ['hello'] })).toMatchObject({ status: 400, body: { error: 'Invalid message at index 0: must be an object' } });
    expect(await send({ messages: [msg(), msg({ contactId: 5 })] })).toMatchObject({
      status: 400,
      body: { error: 'Invalid message at index 1: contactId must be a string' },
    });
  });

  it('400 without a JSON Content-Type', async () => {
    const res = await fetch(`${relay.url}/api/v1/messages/send`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'text/plain' },
      body: JSON.stringify({ messages: [msg()] }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: 'Content-Type must be application/json' });
  });

  it('401 without a key and 403 with an unknown one', async () => {
    expect(await api(relay, 'POST', '/messages/send', { body: { messages: [msg()] } })).toMatchObject({ status: 401, body: { error: 'Missing API key' } });
    expect(await api(relay, 'POST', '/messages/send', { key: 'rly_nope', body: { messages: [msg()] } })).toMatchObject({
      status: 403,
      body: { error: 'Invalid API key' },
    });
  });
});

describe('GET /api/v1/messages/poll', () => {
  it('an empty queue gives messages [] and count 0, named poll:<appId>, with the remaining budget', async () => {
    const fresh = (await createKey(relay, account, [appId])).secret;
    const res = await api(relay, 'GET', '/messages/poll', { key: fresh });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ messages: [], count: 0, queue: `poll:${appId}` });
    expect(res.headers.get('x-ratelimit-remaining')).toBe('99');
  });

  it('400 for an invalid limit, in the interface’s words', async () => {
    for (const limit of ['0', '-1', '51', '1000']) {
      expect(await api(relay, 'GET', `/messages/poll?limit=${limit}`, { key })).toMatchObject({
        status: 400,
        body: { error: 'Invalid limit. Must be between 1 and 50' },
      });
    }
    for (const limit of ['abc', '1.5', '', '10abc']) {
      expect(await api(relay, 'GET', `/messages/poll?limit=${limit}`, { key })).toMatchObject({
        status: 400,
        body: { error: 'Invalid limit parameter' },
      });
    }
  });

  it('pops an inbound message once, with every field; group messages and commands are flagged', async () => {
    const inject = (args: string[]) => relay.cli(['simulate', 'inbound', '--app', appId, ...args]);
    expect((await inject(['--messenger', 'signal', '--contact', '+15550002', '--text', 'hi there', '--timestamp', '1700000000000'])).code).toBe(0);
    expect((await inject(['--messenger', 'simplex', '--contact', '77', '--text', '/start now', '--group', 'grp-1'])).code).toBe(0);
    const polled: any[] = [];
    for (let i = 0; i < 100 && polled.length < 2; i++) {
      const res = await api(relay, 'GET', '/messages/poll?limit=50', { key });
      expect(res.status).toBe(200);
      polled.push(...res.body.messages);
      if (polled.length < 2) await new Promise((r) => setTimeout(r, 20));
    }
    const byContact = Object.fromEntries(polled.map((m) => [m.contactId, m]));
    expect(byContact['+15550002']).toEqual({
      appId,
      messenger: 'signal',
      contactId: '+15550002',
      messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
      content: 'hi there',
      timestamp: 1700000000000,
      isGroupMessage: false,
      isCommand: false,
    });
    expect(byContact['77']).toEqual({
      appId,
      messenger: 'simplex',
      contactId: '77',
      messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
      content: '/start now',
      timestamp: expect.any(Number),
      groupId: 'grp-1',
      isGroupMessage: true,
      isCommand: true,
      command: 'start',
    });
    const again = await api(relay, 'GET', '/messages/poll?limit=50', { key });
    expect(again.body).toEqual({ messages: [], count: 0, queue: `poll:${appId}` });
  });

  it('interleaves several apps round-robin, names every queue, and never pops more than it returns', async () => {
    const second = (await createApp(relay, account, ['signal'], 'Second')).appId;
    const both = (await createKey(relay, account, [appId, second])).secret;
    for (const [app, n] of [
      [appId, 3],
      [second, 3],
    ] as const) {
      for (let i = 0; i < n; i++) {
        const r = await relay.cli(['simulate', 'inbound', '--app', app, '--messenger', 'signal', '--contact', '+15550003', '--text', `${app}-${i}`]);
        expect(r.code, r.stderr).toBe(0);
      }
    }
    // Give the publisher a moment to put all six on the queues.
    await new Promise((r) => setTimeout(r, 300));
    const first = await api(relay, 'GET', '/messages/poll?limit=4', { key: both });
    expect(first.status).toBe(200);
    expect(first.body.queue).toBe(`poll:${appId},${second}`);
    expect(first.body.count).toBe(4);
    const apps = first.body.messages.map((m: any) => m.appId);
    expect(apps.filter((a: string) => a === appId)).toHaveLength(2);
    expect(apps[0]).not.toBe(apps[1]);
    const rest = await api(relay, 'GET', '/messages/poll?limit=50', { key: both });
    expect(rest.body.count).toBe(2);
    const contents = [...first.body.messages, ...rest.body.messages].map((m: any) => m.content).sort();
    expect(contents).toEqual([...[0, 1, 2].map((i) => `${appId}-${i}`), ...[0, 1, 2].map((i) => `${second}-${i}`)].sort());
  });

  it('401 when the key’s apps are all gone, 401 without a key, 403 with an unknown key', async () => {
    const lonely = (await createApp(relay, account, ['session'], 'Lonely')).appId;
    const lonelyKey = (await createKey(relay, account, [lonely])).secret;
    expect((await dashboard(relay, account, 'DELETE', `/apps/${lonely}`)).status).toBe(200);
    expect(await api(relay, 'GET', '/messages/poll', { key: lonelyKey })).toMatchObject({
      status: 401,
      body: { error: 'API key is not associated with any apps' },
    });
    expect(await api(relay, 'GET', '/messages/poll')).toMatchObject({ status: 401, body: { error: 'Missing API key' } });
    expect(await api(relay, 'GET', '/messages/poll', { key: 'rly_nope' })).toMatchObject({ status: 403, body: { error: 'Invalid API key' } });
  });
});
