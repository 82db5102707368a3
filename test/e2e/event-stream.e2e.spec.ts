import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorStore } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, waitFor } from '../support/account-fixture.ts';
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
  const account = await createAccount(relay);
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
    expect(frames.find((f) => f.event === 'InboundMessageReceived')!.data.data).toMatchObject({ appId: appA, content: 'hello A' });
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
    const sent = await api(relay, 'POST', '/messages/send', { key: keyA, body: { messages: [{ appId: appA, messenger: 'signal', contactId: '+15550302', message: 'live' }] } });
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
    expect(accepted.data.data.messages.map((m: { text: string }) => m.text)).toEqual(['live']);
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

  it('an open stream does not hold up a graceful shutdown', async () => {
    const res = await fetch(`${relay.url}/api/v1/events`, { headers: { authorization: `Bearer ${keyA}` } });
    expect(res.status).toBe(200);
    const started = Date.now();
    expect(await relay.stop()).toBe(0);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
