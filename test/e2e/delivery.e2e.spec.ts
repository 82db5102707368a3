import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatorStore, type SimulatedDelivery } from '../../infra/messenger/simulator/simulator-store.ts';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account, type AppFixture } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const started: RelayProcess[] = [];
afterAll(async () => {
  for (const relay of started) {
    await relay.stop();
    await relay.cleanup();
  }
});

const setup = async (env: Record<string, string> = {}) => {
  const relay = await startRelayProcess({ env });
  started.push(relay);
  const account = await createAccount(relay);
  const app = await createApp(relay, account);
  const { secret } = await createKey(relay, account, [app.appId]);
  return { relay, account, app, key: secret };
};

const sendOne = async (relay: RelayProcess, key: string, message: Record<string, string | boolean>) => {
  const res = await api(relay, 'POST', '/messages/send', { key, body: { messages: [message] } });
  expect(res.status).toBe(202);
  return res.body.successfulMessages[0].messageId as string;
};

const attemptsOf = (relay: RelayProcess, messageId: string, count: number, timeoutMs = 15_000) => {
  const store = new SimulatorStore(relay.dataDir);
  return waitFor(
    () => {
      const found = store.deliveries({ messageId });
      return found.length >= count ? found : undefined;
    },
    timeoutMs,
    `${count} attempts of ${messageId}`,
  ).finally(() => store.close());
};

const eventsOf = async (relay: RelayProcess, stream: string) => {
  const res = await relay.cli(['events', '--stream', stream]);
  expect(res.code, res.stderr).toBe(0);
  return res.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; data: any; metadata: any; streamVersion: string });
};

const waitForEvent = (relay: RelayProcess, stream: string, type: string) =>
  waitFor(async () => ((await eventsOf(relay, stream)).some((e) => e.type === type) ? eventsOf(relay, stream) : undefined), 15_000, `${type} on ${stream}`);

const spacing = (deliveries: SimulatedDelivery[]) => deliveries.slice(1).map((d, i) => d.at - deliveries[i]!.at);

describe('outbound delivery through the simulator connector', () => {
  let relay: RelayProcess;
  let account: Account;
  let app: AppFixture;
  let key: string;
  beforeAll(async () => {
    ({ relay, account, app, key } = await setup({ DELIVERY_BACKOFF_BASE_MS: '300', DELIVERY_BACKOFF_FACTOR: '4' }));
  });

  it('delivers an accepted message from the app’s bot identity and records it', async () => {
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: '+15550001', messenger: 'signal', message: '  hello  ' });
    const [delivery] = await attemptsOf(relay, messageId, 1);
    expect(delivery).toMatchObject({
      messageId,
      messenger: 'signal',
      from: app.messengers.find((m) => m.messenger === 'signal')!.address,
      contactId: '+15550001',
      text: 'hello',
      groupId: null,
      attempt: 1,
      ok: true,
    });
    const events = await waitForEvent(relay, `outbound-${messageId}`, 'MessageDelivered');
    expect(events.map((e) => e.type)).toEqual(['MessageDelivered']);
    expect(events[0]!.metadata).toMatchObject({ actor: 'system:delivery', correlationId: messageId });
  });

  it('delivers a message over the display limit as numbered parts, in order, when the client asks for it', async () => {
    const text = Array.from({ length: 600 }, (_, i) => `word${i}`).join(' '); // ~4,500 characters: 3 parts on Signal
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: '+15550020', messenger: 'signal', message: text, split: true });
    const events = await waitForEvent(relay, `outbound-${messageId}`, 'MessageDelivered');
    expect(events.map((e) => [e.type, e.data.parts])).toEqual([['MessageDelivered', 3]]);
    const parts = await attemptsOf(relay, messageId, 3);
    expect(parts.map((p) => [p.ok, p.text.slice(0, 6), [...p.text].length <= 2000])).toEqual([
      [true, '(1/3) ', true],
      [true, '(2/3) ', true],
      [true, '(3/3) ', true],
    ]);
    expect(parts.map((p) => p.text.slice(6)).join(' ')).toBe(text);
    // Without split, the interface's rule stands: over the limit, the message fails for good.
    const whole = await sendOne(relay, key, { appId: app.appId, contactId: '+15550020', messenger: 'signal', message: text });
    const refused = await waitForEvent(relay, `outbound-${whole}`, 'MessageAbandoned');
    expect(refused.at(-1)!.data.reason).toBe('Message exceeds the signal limit of 2000 characters');
    const wrongType = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId: app.appId, contactId: '+15550020', messenger: 'signal', message: 'x', split: 'yes' }] } });
    expect(wrongType).toMatchObject({ status: 400, body: { error: 'Invalid message at index 0: split must be a boolean' } });
  });

  it('retries transient failures after the configured backoff (base 300 ms, factor 4)', async () => {
    const contact = '+15550010';
    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', contact, '--times', '2'])).code).toBe(0);
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: contact, messenger: 'signal', message: 'retry me' });
    const attempts = await attemptsOf(relay, messageId, 3);
    expect(attempts.map((a) => [a.attempt, a.ok])).toEqual([
      [1, false],
      [2, false],
      [3, true],
    ]);
    const [first, second] = spacing(attempts);
    expect(first).toBeGreaterThanOrEqual(300 - 20);
    expect(first).toBeLessThan(300 + 700);
    expect(second).toBeGreaterThanOrEqual(1200 - 20);
    expect(second).toBeLessThan(1200 + 700);
    const events = await waitForEvent(relay, `outbound-${messageId}`, 'MessageDelivered');
    expect(events.map((e) => e.type)).toEqual(['DeliveryAttemptFailed', 'DeliveryAttemptFailed', 'MessageDelivered']);
    expect(events[0]!.data).toMatchObject({ attempt: 1, reason: 'Simulated failure', permanent: false, retry: { attempt: 2 } });
  });

  it('abandons a message after the third failure, with an event saying why', async () => {
    const contact = 'bob_relay.01';
    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', contact, '--times', '-1', '--reason', 'Daemon offline'])).code).toBe(0);
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: contact, messenger: 'signal', message: 'doomed' });
    const events = await waitForEvent(relay, `outbound-${messageId}`, 'MessageAbandoned');
    expect(events.map((e) => e.type)).toEqual(['DeliveryAttemptFailed', 'DeliveryAttemptFailed', 'DeliveryAttemptFailed', 'MessageAbandoned']);
    expect(events[3]!.data).toMatchObject({ messageId, attempts: 3, reason: 'Gave up after 3 attempts: Daemon offline' });
    expect(await attemptsOf(relay, messageId, 3)).toHaveLength(3);
  });

  it('a contact id the messenger rejects fails at once, without retry', async () => {
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: 'not-a-session-id', messenger: 'session', message: 'x' });
    const events = await waitForEvent(relay, `outbound-${messageId}`, 'MessageAbandoned');
    expect(events.map((e) => e.type)).toEqual(['DeliveryAttemptFailed', 'MessageAbandoned']);
    expect(events[1]!.data.reason).toBe('Invalid contactId for session: expected a 66-character hex Session ID starting with 05');
    await new Promise((r) => setTimeout(r, 500));
    expect(await attemptsOf(relay, messageId, 1)).toHaveLength(1);
  });

  it('a disabled app-messenger neither delivers nor receives', async () => {
    const simplex = app.messengers.find((m) => m.messenger === 'simplex')!;
    const disabled = await dashboard(relay, account, 'PUT', `/app-messengers/${simplex.id}`, { status: 'disabled' });
    expect(disabled).toEqual({ status: 200, body: { ...simplex, appId: app.appId, status: 'disabled' } });
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: '12345', messenger: 'simplex', message: 'x' });
    const events = await waitForEvent(relay, `outbound-${messageId}`, 'MessageAbandoned');
    expect(events[1]!.data.reason).toBe('App messenger disabled');
    const inbound = await relay.cli(['simulate', 'inbound', '--app', app.appId, '--messenger', 'simplex', '--contact', '1', '--text', 'hi']);
    expect(inbound.code).toBe(1);
    expect(inbound.stderr).toContain(`is disabled`);
    expect((await dashboard(relay, account, 'PUT', `/app-messengers/${simplex.id}`, { status: 'active' })).status).toBe(200);
  });
});

describe('default delivery policy', () => {
  it('retries after 1 s and then 4 s', async () => {
    const { relay, app, key } = await setup();
    const contact = '+15550011';
    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', contact, '--times', '2'])).code).toBe(0);
    const messageId = await sendOne(relay, key, { appId: app.appId, contactId: contact, messenger: 'signal', message: 'slow' });
    const attempts = await attemptsOf(relay, messageId, 3, 20_000);
    const [first, second] = spacing(attempts);
    expect(first).toBeGreaterThanOrEqual(1000 - 20);
    expect(first).toBeLessThan(1000 + 700);
    expect(second).toBeGreaterThanOrEqual(4000 - 20);
    expect(second).toBeLessThan(4000 + 700);
    expect(attempts[2]!.ok).toBe(true);
  });
});
