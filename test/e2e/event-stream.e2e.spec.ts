import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

interface Frame {
  id: string;
  event: string;
  data: { id: string; type: string; streamName: string; streamVersion: string; globalPosition: string; recordedAt: string; data: any; metadata: any };
}
const parseFrames = (text: string): Frame[] =>
  text
    .split('\n\n')
    .filter((block) => block.includes('data: '))
    .map((block) => {
      const field = (name: string) => block.split('\n').find((line) => line.startsWith(`${name}: `))!.slice(name.length + 2);
      return { id: field('id'), event: field('event'), data: JSON.parse(field('data')) };
    });

let relay: RelayProcess;
let account: Account;
let keyA: string;
let appA: string;
let appB: string;
let messageId: string;

const history = async (headers: Record<string, string> = {}, query = 'follow=false') => {
  const res = await fetch(`${relay.url}/api/v1/events?${query}`, { headers: { authorization: `Bearer ${keyA}`, ...headers } });
  return { status: res.status, headers: res.headers, frames: parseFrames(await res.text()) };
};

beforeAll(async () => {
  relay = await startRelayProcess();
  account = await createAccount(relay);
  appA = (await createApp(relay, account, ['signal'], 'App A')).appId;
  appB = (await createApp(relay, account, ['signal'], 'App B')).appId;
  keyA = (await createKey(relay, account, [appA])).secret;
  const keyB = (await createKey(relay, account, [appB])).secret;
  const send = async (key: string, app: string) =>
    (await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId: app, messenger: 'signal', contactId: '+15550300', message: 'hi' }] } })).body
      .successfulMessages[0].messageId as string;
  messageId = await send(keyA, appA);
  await send(keyB, appB);
  const simulator = new SimulatorStore(relay.dataDir);
  await waitFor(() => simulator.deliveries({ messageId }).length > 0, 15_000, 'the delivery').finally(() => simulator.close());
  expect((await relay.cli(['simulate', 'inbound', '--app', appA, '--messenger', 'signal', '--contact', '+15550301', '--text', 'hello A'])).code).toBe(0);
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

describe('GET /api/v1/events (Server-Sent Events)', () => {
  it('replays the history of the key’s apps only, in order, with every field an auditor needs and no secrets', async () => {
    const { status, headers, frames } = await waitFor(async () => {
      const got = await history();
      return got.frames.some((f) => f.event === 'MessageDelivered') ? got : undefined;
    }, 15_000, 'the delivery event');
    expect(status).toBe(200);
    expect(headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    const types = frames.map((f) => f.event);
    expect(types.slice(0, 3)).toEqual(['AppCreated', 'AppMessengerAdded', 'AppMessengerProvisioned']);
    for (const type of ['CredentialCreated', 'MessagesAccepted', 'MessageDelivered', 'InboundMessageReceived']) expect(types).toContain(type);
    const positions = frames.map((f) => BigInt(f.id));
    expect(positions.every((p, i) => i === 0 || p > positions[i - 1]!)).toBe(true);
    for (const f of frames) {
      expect(f.data.globalPosition).toBe(f.id);
      expect(f.data).toMatchObject({ type: f.event, id: expect.any(String), streamName: expect.any(String), streamVersion: expect.any(String), recordedAt: expect.any(String) });
      expect(JSON.stringify(f.data)).not.toContain(appB);
      expect(JSON.stringify(f.data)).not.toMatch(/keyHash|secretEncrypted|tokenHash/);
    }
    const delivered = frames.find((f) => f.event === 'MessageDelivered')!;
    expect(delivered.data).toMatchObject({ streamName: `outbound-${messageId}`, data: { messageId, appId: appA, messenger: 'signal', attempt: 1 } });
    expect(delivered.data.metadata).toMatchObject({ actor: 'system:delivery', correlationId: messageId });
    const accepted = frames.find((f) => f.event === 'MessagesAccepted')!;
    expect(accepted.data.metadata.actor).toMatch(/^credential:/);
    // That a body existed (its key), never the body, the contact or even the ciphertext (docs/privacy.md).
    expect(accepted.data.data.messages).toEqual([{ messageId, appId: appA, messenger: 'signal', keyId: expect.any(String) }]);
    expect(accepted.data.data).not.toHaveProperty('bodies');
    const inbound = frames.find((f) => f.event === 'InboundMessageReceived')!.data.data;
    expect(inbound).toMatchObject({ appId: appA, messenger: 'signal', keyId: expect.any(String), isGroupMessage: false, isCommand: false });
    expect(inbound).not.toHaveProperty('sealed');
    for (const f of frames) expect(JSON.stringify(f.data)).not.toMatch(/hello A|\+1555030[01]|"hi"|s1:/);
  });

  it('resumes after a position, from Last-Event-ID or after=', async () => {
    const all = (await history()).frames;
    const from = all[2]!.id;
    expect((await history({ 'last-event-id': from })).frames.map((f) => f.id)).toEqual(all.slice(3).map((f) => f.id));
    expect((await history({}, `follow=false&after=${from}`)).frames.map((f) => f.id)).toEqual(all.slice(3).map((f) => f.id));
  });

  it('follows new events live', async () => {
    const head = (await history()).frames.at(-1)!.id;
    const controller = new AbortController();
    const res = await fetch(`${relay.url}/api/v1/events?after=${head}`, { headers: { authorization: `Bearer ${keyA}` }, signal: controller.signal });
    expect(res.status).toBe(200);
    const reader = res.body!.getReader();
    const sent = await api(relay, 'POST', '/messages/send', { key: keyA, body: { messages: [{ appId: appA, messenger: 'signal', contactId: '+15550302', message: 'a live body' }] } });
    expect(sent.status).toBe(202);
    let text = '';
    const deadline = Date.now() + 10_000;
    while (!parseFrames(text).some((f) => f.event === 'MessagesAccepted') && Date.now() < deadline) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    const accepted = parseFrames(text).find((f) => f.event === 'MessagesAccepted')!;
    expect(accepted.data.data.messages.map((m: { messageId: string }) => m.messageId)).toEqual([sent.body.successfulMessages[0].messageId]);
    expect(text).not.toMatch(/a live body|15550302/);
    expect(BigInt(accepted.id)).toBeGreaterThan(BigInt(head));
  });

  it('answers errors in the interface’s form', async () => {
    expect((await fetch(`${relay.url}/api/v1/events`)).status).toBe(401);
    const bad = await fetch(`${relay.url}/api/v1/events?after=abc`, { headers: { authorization: `Bearer ${keyA}` } });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toEqual({ error: 'Invalid after. Must be a non-negative integer event position' });
    const wrong = await fetch(`${relay.url}/api/v1/events?follow=maybe`, { headers: { authorization: `Bearer ${keyA}` } });
    expect(wrong.status).toBe(400);
    expect(await wrong.json()).toEqual({ error: 'Invalid follow. Must be true or false' });
    const unknown = await fetch(`${relay.url}/api/v1/events`, { headers: { authorization: 'Bearer rly_unknown' } });
    expect(unknown.status).toBe(403);
  });

});

/** An open follow stream and everything it has received so far. */
const openStream = async (key: string, after = '0') => {
  const res = await fetch(`${relay.url}/api/v1/events?after=${after}`, { headers: { authorization: `Bearer ${key}` } });
  let text = '';
  let ended = false;
  const reading = (async () => {
    if (!res.body) return;
    const reader = res.body.getReader();
    for (;;) {
      const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    ended = true;
  })();
  return { res, text: () => text, ended: () => ended, reading };
};

describe('revocation and bounds of event streams', () => {
  it('a stream ends at once when its key is deleted, before the deletion and anything after it', async () => {
    const { credentialId, secret } = await createKey(relay, account, [appA]);
    const stream = await openStream(secret, (await history()).frames.at(-1)!.id);
    expect(stream.res.status).toBe(200);
    expect((await dashboard(relay, account, 'DELETE', `/credentials/${credentialId}`)).status).toBe(200);
    await waitFor(() => stream.ended(), 5_000, 'the stream to end');
    // Sent after the deletion: never on the ended stream.
    await api(relay, 'POST', '/messages/send', { key: keyA, body: { messages: [{ appId: appA, messenger: 'signal', contactId: '+15550303', message: 'after' }] } });
    expect(parseFrames(stream.text()).map((f) => f.event)).not.toContain('CredentialDeleted');
    expect(parseFrames(stream.text()).map((f) => f.event)).not.toContain('MessagesAccepted');
  });

  it('a stream ends when one of its apps is deleted', async () => {
    const appC = (await createApp(relay, account, ['signal'], 'App C')).appId;
    const { secret } = await createKey(relay, account, [appC, appA]);
    const stream = await openStream(secret, (await history()).frames.at(-1)!.id);
    expect(stream.res.status).toBe(200);
    expect((await dashboard(relay, account, 'DELETE', `/apps/${appC}`)).status).toBe(200);
    await waitFor(() => stream.ended(), 5_000, 'the stream to end');
    expect(parseFrames(stream.text()).map((f) => f.event)).not.toContain('AppDeleted');
  });

  it('at most 5 open streams per key (429 in the interface’s shape), counted until they close', async () => {
    const { secret } = await createKey(relay, account, [appA]);
    const controllers = Array.from({ length: 5 }, () => new AbortController());
    const open = await Promise.all(controllers.map((c) => fetch(`${relay.url}/api/v1/events`, { headers: { authorization: `Bearer ${secret}` }, signal: c.signal })));
    expect(open.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    const refused = await fetch(`${relay.url}/api/v1/events`, { headers: { authorization: `Bearer ${secret}` } });
    expect(refused.status).toBe(429);
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() - 1000);
    expect(await refused.json()).toEqual({ error: 'Too many open event streams for this API key' });
    // Another key of the same user is not held back by this one's streams.
    expect((await fetch(`${relay.url}/api/v1/events?follow=false`, { headers: { authorization: `Bearer ${keyA}` } })).status).toBe(200);
    controllers[0]!.abort();
    const again = await waitFor(async () => {
      const res = await fetch(`${relay.url}/api/v1/events?follow=false`, { headers: { authorization: `Bearer ${secret}` } });
      if (res.status !== 200) await res.arrayBuffer();
      return res.status === 200 ? res : undefined;
    }, 5_000, 'a stream slot to free');
    await again.text();
    for (const c of controllers) c.abort();
    // The responses stay referenced until here: undici cancels the body of a Response that is
    // garbage-collected, which would close its stream early and free its place on the server.
    open.length = 0;
  });
});

describe('shutdown', () => {
  it('an open stream does not hold up a graceful shutdown', async () => {
    const res = await fetch(`${relay.url}/api/v1/events`, { headers: { authorization: `Bearer ${keyA}` } });
    expect(res.status).toBe(200);
    const started = Date.now();
    expect(await relay.stop()).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
