/**
 * Issue 50 §1, "Keys", through the real service: a key's last use (recorded once an hour at most),
 * and rolling a key (a new secret for the same credential; the old one works for the overlap, then
 * is refused with the interface's invalid-key answer). The overlap's end is seen without waiting
 * an hour: CREDENTIAL_ROLL_MIN_OVERLAP_SECONDS lets the test choose a few seconds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '../../infra/crypto/keys.ts';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

let relay: RelayProcess;
let account: Account;
let appId: string;

beforeAll(async () => {
  relay = await startRelayProcess({ env: { CREDENTIAL_ROLL_MIN_OVERLAP_SECONDS: '1' } });
  account = await createAccount(relay);
  appId = (await createApp(relay, account, ['signal'], 'Roll bot')).appId;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

/** Relay's own dashboard routes, as the keys page calls them (same origin, the cookie, JSON). */
const own = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}, who: Account = account) => {
  const res = await fetch(`${relay.url}${path}`, {
    method,
    headers: { cookie: who.cookie, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, cacheControl: res.headers.get('cache-control'), body: (await res.json()) as any };
};
const activityOf = async (credentialId: string) => {
  const answer = await own('GET', '/dashboard/credentials/activity');
  expect(answer.status).toBe(200);
  return (answer.body.data.items as any[]).find((item) => item.credentialId === credentialId);
};
const roll = (credentialId: string, overlapSeconds: number) => own('POST', '/dashboard/credentials/roll', { credentialId, overlapSeconds });
const credentialEvents = async (type: string) => {
  const history = await relay.cli(['events', '--category', 'credential', '--type', type]);
  expect(history.code, history.stderr).toBe(0);
  return history.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line));
};
const poll = (key: string) => api(relay, 'GET', '/messages/poll', { key });
const verify = (key: string) => api(relay, 'GET', '/auth/verify', { key });

describe('a key’s last use', () => {
  it('is never until the key is used, then the first use of the hour, recorded once whatever the requests', async () => {
    const key = await createKey(relay, account, [appId]);
    expect(await activityOf(key.credentialId)).toEqual({ credentialId: key.credentialId, lastUsedAt: null, previousKeyUntil: null });
    const before = Date.now();
    for (let i = 0; i < 5; i++) expect((await poll(key.secret)).status).toBe(200);
    expect((await verify(key.secret)).status).toBe(200);
    const seen = await waitFor(async () => ((await activityOf(key.credentialId))?.lastUsedAt as string | null) ?? undefined, 15_000, 'the key’s last use');
    expect(Date.parse(seen)).toBeGreaterThanOrEqual(before - 1000);
    expect(Date.parse(seen)).toBeLessThanOrEqual(Date.now());
    for (let i = 0; i < 5; i++) expect((await poll(key.secret)).status).toBe(200);
    const used = (await credentialEvents('CredentialUsed')).filter((e) => e.data.credentialId === key.credentialId);
    expect(used).toHaveLength(1);
    expect(used[0].data).toEqual({ credentialId: key.credentialId, userId: expect.any(String), appIds: [appId], usedAt: seen });
  });

  it('is shown to the key’s owner only', async () => {
    const other = await createAccount(relay);
    const key = await createKey(relay, account, [appId]);
    const theirs = await own('GET', '/dashboard/credentials/activity', undefined, {}, other);
    expect(theirs).toMatchObject({ status: 200, body: { success: true, data: { items: [] } } });
    expect(await own('GET', '/dashboard/credentials/activity', undefined, {}, { session: '', cookie: '' })).toMatchObject({ status: 400, body: { success: false, error: 'Session token is required' } });
    expect(JSON.stringify((await own('GET', '/dashboard/credentials/activity')).body)).toContain(key.credentialId);
  });
});

describe('rolling a key', () => {
  it('gives the same credential a new secret, shown once; the old one works during the overlap, then is refused', async () => {
    const key = await createKey(relay, account, [appId]);
    const listed = async () => (await dashboard(relay, account, 'GET', '/credentials')).body.items.find((c: any) => c.credentialId === key.credentialId);
    const made = await listed();

    const rolled = await roll(key.credentialId, 3600);
    expect(rolled.status).toBe(200);
    expect(rolled.cacheControl).toBe('no-store');
    const newSecret = rolled.body.data.secret as string;
    expect(rolled.body).toEqual({
      success: true,
      data: { credentialId: key.credentialId, keyPreview: `${newSecret.slice(0, 8)}…`, previousKeyUntil: expect.any(String), secret: expect.stringMatching(/^rly_[A-Za-z0-9_-]{43}$/) },
    });
    expect(newSecret).not.toBe(key.secret);
    expect(Math.abs(Date.parse(rolled.body.data.previousKeyUntil) - Date.now() - 3_600_000)).toBeLessThan(60_000);
    // The same credential (id, name, apps), its new key's preview; the full list has the new secret.
    expect(await listed()).toEqual({ ...made, keyPreview: `${newSecret.slice(0, 8)}…` });
    expect((await dashboard(relay, account, 'GET', '/credentials-full')).body.items.find((c: any) => c.credentialId === key.credentialId).secret).toBe(newSecret);
    expect(await activityOf(key.credentialId)).toMatchObject({ previousKeyUntil: rolled.body.data.previousKeyUntil });

    // Both keys work during the overlap, as the same credential.
    for (const secret of [key.secret, newSecret]) {
      expect(await verify(secret)).toMatchObject({ status: 200, body: { valid: true, appIds: [appId] } });
      expect((await poll(secret)).status).toBe(200);
      const sent = await api(relay, 'POST', '/messages/send', { key: secret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550007777', message: 'hi' }] } });
      expect(sent.status).toBe(202);
    }

    // Rolling again with a short overlap: the first secret stops at once, the second works for the
    // overlap and is refused after it with the interface's answers; the newest works on.
    const again = await roll(key.credentialId, 4);
    expect(again.status).toBe(200);
    const newest = again.body.data.secret as string;
    const end = Date.parse(again.body.data.previousKeyUntil);
    expect(await poll(key.secret)).toMatchObject({ status: 403, body: { error: 'Invalid API key' } });
    const during = await verify(newSecret);
    if (Date.now() < end) expect(during).toMatchObject({ status: 200, body: { valid: true } });
    await waitFor(async () => (await poll(newSecret)).status === 403, 20_000, 'the old secret refused after its overlap');
    expect(Date.now()).toBeGreaterThanOrEqual(end);
    expect(await poll(newSecret)).toMatchObject({ status: 403, body: { error: 'Invalid API key' } });
    expect(await verify(newSecret)).toMatchObject({ status: 401, body: { error: 'Invalid API key' } });
    const refusedSend = await api(relay, 'POST', '/messages/send', { key: newSecret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550007777', message: 'hi' }] } });
    expect(refusedSend).toMatchObject({ status: 403, body: { error: 'Invalid API key' } });
    expect(await verify(newest)).toMatchObject({ status: 200, body: { valid: true, appIds: [appId] } });
    expect(await activityOf(key.credentialId)).toMatchObject({ previousKeyUntil: null, lastUsedAt: expect.any(String) });

    // The history has the rolls, with no key, hash or encrypted secret in its public shape.
    const rolls = (await credentialEvents('CredentialRolled')).filter((e) => e.data.credentialId === key.credentialId);
    expect(rolls.map((e) => e.data)).toEqual([
      { credentialId: key.credentialId, userId: expect.any(String), appIds: [appId], keyPreview: `${newSecret.slice(0, 8)}…`, previousKeyUntil: rolled.body.data.previousKeyUntil, rolledAt: expect.any(String) },
      { credentialId: key.credentialId, userId: expect.any(String), appIds: [appId], keyPreview: `${newest.slice(0, 8)}…`, previousKeyUntil: again.body.data.previousKeyUntil, rolledAt: expect.any(String) },
    ]);
    const everything = JSON.stringify(await credentialEvents('CredentialRolled')) + relay.output();
    for (const secret of [key.secret, newSecret, newest]) {
      expect(everything).not.toContain(secret);
      expect(everything).not.toContain(hashKey(secret));
    }
  });

  it('ends an event stream opened with the old secret once its overlap has ended, before any later event', async () => {
    const key = await createKey(relay, account, [appId]);
    const rolled = await roll(key.credentialId, 3);
    expect(rolled.status).toBe(200);
    const controller = new AbortController();
    const res = await fetch(`${relay.url}/api/v1/events`, { headers: { authorization: `Bearer ${key.secret}` }, signal: controller.signal });
    expect(res.status).toBe(200);
    let text = '';
    let ended = false;
    const reading = (async () => {
      const reader = res.body!.getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return void (ended = true);
        text += new TextDecoder().decode(value);
      }
    })().catch(() => undefined);
    await waitFor(async () => (await poll(key.secret)).status === 403, 20_000, 'the old secret refused after its overlap');
    const sent = await api(relay, 'POST', '/messages/send', { key: rolled.body.data.secret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550008888', message: 'after the end' }] } });
    expect(sent.status).toBe(202);
    await waitFor(() => ended, 15_000, 'the stream’s end');
    controller.abort();
    await reading;
    expect(text).toContain('the key or one of its apps is gone');
    expect(text).not.toContain(sent.body.successfulMessages[0].messageId);
  });

  it('is refused for an overlap out of bounds, another user’s key, a deleted key, a cross-origin request, or no session', async () => {
    const key = await createKey(relay, account, [appId]);
    expect(await roll(key.credentialId, 8 * 86_400)).toMatchObject({ status: 400, body: { success: false, error: 'Invalid overlapSeconds: must be from 1 second to 7 days' } });
    expect(await roll(key.credentialId, 0)).toMatchObject({ status: 400, body: { success: false, error: 'Invalid overlapSeconds: must be from 1 second to 7 days' } });
    expect(await own('POST', '/dashboard/credentials/roll', { credentialId: key.credentialId })).toMatchObject({ status: 400, body: { success: false, error: 'Missing required field: overlapSeconds' } });
    expect(await own('POST', '/dashboard/credentials/roll', { credentialId: key.credentialId, overlapSeconds: 3600 }, { origin: 'https://evil.example' })).toMatchObject({
      status: 400,
      body: { success: false, error: 'Cross-origin requests are not allowed' },
    });
    const other = await createAccount(relay);
    expect(await own('POST', '/dashboard/credentials/roll', { credentialId: key.credentialId, overlapSeconds: 3600 }, {}, other)).toMatchObject({ status: 404, body: { success: false, error: 'Credential not found' } });
    expect(await own('POST', '/dashboard/credentials/roll', { credentialId: key.credentialId, overlapSeconds: 3600 }, {}, { session: '', cookie: '' })).toMatchObject({
      status: 400,
      body: { success: false, error: 'Session token is required' },
    });
    expect((await dashboard(relay, account, 'DELETE', `/credentials/${key.credentialId}`)).status).toBe(200);
    expect(await roll(key.credentialId, 3600)).toMatchObject({ status: 404, body: { success: false, error: 'Credential not found' } });
    // Nothing was rolled: the key was refused as deleted, and no roll is in the history.
    expect((await credentialEvents('CredentialRolled')).filter((e) => e.data.credentialId === key.credentialId)).toEqual([]);
  });
});
