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

/**
 * The streams a test holds open. Their responses stay referenced until the test ends: undici
 * cancels the body of a Response that is garbage-collected, which closes its connection and so
 * frees the stream's place on the server (a collection in the middle of a test let a user open
 * 13 streams where 10 are allowed).
 */
interface HeldStreams {
  readonly controllers: AbortController[];
  readonly responses: Response[];
}
const heldStreams = (): HeldStreams => ({ controllers: [], responses: [] });
const closeStreams = (held: HeldStreams) => {
  for (const controller of held.controllers) controller.abort();
  held.responses.length = 0;
};

/** Opens a following stream; resolves with its status once its headers came (the body stays open). */
const openStream = async (secret: string, held: HeldStreams, on: RelayProcess = relay) => {
  const controller = new AbortController();
  held.controllers.push(controller);
  const res = await fetch(`${on.url}/api/v1/events`, { headers: { authorization: `Bearer ${secret}` }, signal: controller.signal });
  if (res.status !== 200) return { status: res.status, body: (await res.json()) as unknown };
  held.responses.push(res);
  return { status: 200 };
};

describe('3. event streams: a few accounts cannot take them all (default settings)', () => {
  it('caps streams per user at 10, so that four free accounts with 10 keys each leave the process to others', async () => {
    const held = heldStreams();
    try {
      const refusals: unknown[] = [];
      for (let user = 0; user < 4; user++) {
        const hostile = await createAccount(relay);
        const app = (await createApp(relay, hostile, ['signal'])).appId;
        let opened = 0;
        for (let k = 0; k < 10; k++) {
          const { secret } = await createKey(relay, hostile, [app]);
          for (let s = 0; s < 5; s++) {
            const res = await openStream(secret, held);
            if (res.status === 200) opened++;
            else refusals.push(res);
          }
        }
        expect(opened).toBe(10);
      }
      expect(refusals).toHaveLength(4 * (50 - 10));
      expect(new Set(refusals.map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify({ status: 429, body: { error: 'Too many open event streams for this user' } })]));
      // Another tenant still gets its stream.
      expect(await openStream(key, held)).toEqual({ status: 200 });
    } finally {
      closeStreams(held);
    }
  });
});

describe('3. event streams: a fifth of the process budget is kept for users who hold none', () => {
  it('users holding streams stop at 8 of 10; a user holding none still gets one', async () => {
    const small = await startRelayProcess({ env: { EVENTS_MAX_STREAMS: '10', EVENTS_MAX_STREAMS_PER_USER: '10', EVENTS_MAX_STREAMS_PER_KEY: '10' } });
    const held = heldStreams();
    try {
      const first = await createAccount(small);
      const firstKey = (await createKey(small, first, [(await createApp(small, first, ['signal'])).appId])).secret;
      const second = await createAccount(small);
      const secondKey = (await createKey(small, second, [(await createApp(small, second, ['signal'])).appId])).secret;
      const statuses: number[] = [];
      for (let i = 0; i < 9; i++) statuses.push((await openStream(firstKey, held, small)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 200, 200, 200, 503]);
      expect(await openStream(secondKey, held, small)).toEqual({ status: 200 });
      expect(await openStream(secondKey, held, small)).toEqual({ status: 503, body: { error: 'Too many open event streams' } });
    } finally {
      closeStreams(held);
      await small.stop();
      await small.cleanup();
    }
  });
});

describe('5. webhook secrets outside ASCII', () => {
  it('are refused when they are saved, with a clear 400', async () => {
    for (const secret of ['Ǽ-token', 'tökén', 'tab\tinside']) {
      const res = await fetch(`${relay.url}${DASHBOARD}/apps/update`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', cookie: account.cookie },
        body: JSON.stringify({ appId, webhookAuthType: 'bearer', webhookAuthSecret: secret }),
      });
      expect({ status: res.status, body: await res.json() }, secret).toEqual({
        status: 400,
        body: { success: false, error: secret.includes('\t') ? 'webhookAuthSecret contains invalid characters' : 'Invalid webhookAuthSecret: must be printable ASCII characters (it is sent in an HTTP header)' },
      });
    }
  });
});
