/**
 * Webhook delivery of inbound messages end to end: an app switched to `deliveryType: webhook` gets
 * each message POSTed in the polled-message shape, authenticated as configured and signed the
 * Standard Webhooks way (checked here with the `standardwebhooks` library, as a receiver would); a
 * receiver that fails is tried again in order, one that keeps failing has the message given up on
 * with an event; switching back to poll loses nothing.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const SECRET = 'whk-s3cret-of-the-bot';

interface Received {
  headers: http.IncomingHttpHeaders;
  body: string;
}

describe('webhook delivery of inbound messages', () => {
  let relay: RelayProcess;
  let account: Account;
  let appId: string;
  let key: string;
  let receiver: http.Server;
  let url: string;
  /** The app's Standard Webhooks signing secret, as the update that made it delivered by webhook showed it once. */
  let signingSecret: string;
  const received: Received[] = [];
  /** Statuses to answer next, in order; 204 once they run out. */
  const failures: number[] = [];

  const contactWrites = async (text: string) => {
    const r = await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550100001', '--text', text]);
    expect(r.code, r.stderr).toBe(0);
  };
  const taken = () => received.filter((r) => r.headers['x-answered'] === undefined);

  beforeAll(async () => {
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const status = failures.shift() ?? 204;
        received.push({ headers: { ...req.headers, ...(status >= 300 ? { 'x-answered': String(status) } : {}) }, body });
        res.writeHead(status).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/relay-hook`;
    relay = await startRelayProcess({
      env: { WEBHOOK_ALLOW_LOCAL: 'true', WEBHOOK_BACKOFF_BASE_MS: '100', WEBHOOK_BACKOFF_MAX_MS: '300', WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_IDLE_POLL_MS: '100' },
    });
    account = await createAccount(relay);
    appId = (await createApp(relay, account, ['signal'])).appId;
    key = (await createKey(relay, account, [appId])).secret;
    const updated = await dashboard(relay, account, 'POST', '/apps/update', { appId, deliveryType: 'webhook', webhookUrl: url, webhookAuthType: 'bearer', webhookAuthSecret: SECRET });
    expect(updated.status, JSON.stringify(updated.body)).toBe(200);
    signingSecret = updated.body.webhookSigningSecret;
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await new Promise((resolve) => receiver.close(resolve));
  });

  it('refuses webhook delivery without a URL', async () => {
    const other = (await createApp(relay, account, ['signal'], 'No hook')).appId;
    expect(await dashboard(relay, account, 'POST', '/apps/update', { appId: other, deliveryType: 'webhook' })).toEqual({
      status: 400,
      body: { success: false, error: 'webhookUrl is required when deliveryType is webhook' },
    });
  });

  it('POSTs each message in the polled shape, with the bearer secret and a Standard Webhooks signature a receiver can check', async () => {
    await contactWrites('hello hook');
    const [delivery] = await waitFor(() => (taken().length >= 1 ? taken() : undefined), 10_000, 'the webhook POST');
    const message = JSON.parse(delivery!.body);
    expect(message).toEqual({
      appId,
      messenger: 'signal',
      contactId: '+15550100001',
      messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
      content: 'hello hook',
      timestamp: expect.any(Number),
      isGroupMessage: false,
      isCommand: false,
    });
    expect(delivery!.headers).toMatchObject({ 'content-type': 'application/json', authorization: `Bearer ${SECRET}`, 'webhook-id': message.messageId, 'webhook-signature': expect.stringMatching(/^v1,/) });
    const headers = delivery!.headers as Record<string, string>;
    // The official libraries, with their default settings, verify it with the secret Relay made.
    expect(signingSecret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(signingSecret).verify(delivery!.body, headers)).toEqual(message);
    expect(() => new SvixWebhook(signingSecret).verify(delivery!.body, headers)).not.toThrow();
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 7).toString('base64')}`).verify(delivery!.body, headers)).toThrow();
    // And by hand, as the specification says.
    const expected = createHmac('sha256', Buffer.from(signingSecret.slice(6), 'base64')).update(`${headers['webhook-id']}.${headers['webhook-timestamp']}.${delivery!.body}`).digest();
    const given = Buffer.from(headers['webhook-signature']!.split(' ')[0]!.slice(3), 'base64');
    expect(given.length === expected.length && timingSafeEqual(given, expected)).toBe(true);
    // The bearer secret is not the signing key, and the signing secret is never sent.
    expect(() => new Webhook(SECRET, { format: 'raw' }).verify(delivery!.body, headers)).toThrow();
    expect(JSON.stringify(delivery!.headers)).not.toContain(signingSecret.slice(6, 26));
    // The app shows no more than that it has one.
    const listed = (await dashboard(relay, account, 'GET', '/apps')).body.items.find((a: { id: string }) => a.id === appId);
    expect(listed).toMatchObject({ hasWebhookSigningSecret: true, webhookPreviousSigningSecretUntil: null });
    expect(JSON.stringify(listed)).not.toContain('whsec_');
    // Its messages are the webhook's: a poll does not take them.
    expect((await api(relay, 'GET', '/messages/poll', { key })).body).toMatchObject({ messages: [], count: 0 });
  });

  it('authenticates with the named header instead when the app says so', async () => {
    received.length = 0;
    expect((await dashboard(relay, account, 'POST', '/apps/update', { appId, webhookAuthType: 'header', webhookAuthHeaderName: 'X-Hook-Token' })).status).toBe(200);
    await contactWrites('with a header');
    const [delivery] = await waitFor(() => (taken().length >= 1 ? taken() : undefined), 10_000, 'the webhook POST');
    expect(delivery!.headers['x-hook-token']).toBe(SECRET);
    expect(delivery!.headers.authorization).toBeUndefined();
    expect((await dashboard(relay, account, 'POST', '/apps/update', { appId, webhookAuthType: 'bearer', webhookAuthHeaderName: null })).status).toBe(200);
  });

  it('rotates the signing secret: shown once, and the old one signs beside it during the overlap', async () => {
    received.length = 0;
    const rotated = await dashboard(relay, account, 'POST', '/apps/update', { appId, rotateWebhookSigningSecret: true });
    expect(rotated.status).toBe(200);
    const fresh = rotated.body.webhookSigningSecret as string;
    expect(fresh).toMatch(/^whsec_/);
    expect(fresh).not.toBe(signingSecret);
    expect(Date.parse(rotated.body.webhookPreviousSigningSecretUntil)).toBeGreaterThan(Date.now() + 23 * 3_600_000);
    // A change that asks for nothing of it shows no secret.
    expect((await dashboard(relay, account, 'POST', '/apps/update', { appId, webhookUrl: url })).body.webhookSigningSecret).toBeUndefined();
    await contactWrites('after the rotation');
    const [delivery] = await waitFor(() => (taken().length >= 1 ? taken() : undefined), 10_000, 'the webhook POST');
    const headers = delivery!.headers as Record<string, string>;
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [fresh, signingSecret]) expect(() => new Webhook(secret).verify(delivery!.body, headers)).not.toThrow();
    signingSecret = fresh;
  });

  it('tries a failing receiver again and delivers in order once it recovers', async () => {
    received.length = 0;
    // Two refusals: the third attempt (of three) takes it.
    failures.push(500, 503);
    await contactWrites('first');
    await contactWrites('second');
    const delivered = await waitFor(() => (taken().length >= 2 ? taken() : undefined), 15_000, 'both messages');
    expect(delivered.map((d) => JSON.parse(d.body).content)).toEqual(['first', 'second']);
    expect(received.map((r) => [JSON.parse(r.body).content, r.headers['x-answered'] ?? 'taken'])).toEqual([
      ['first', '500'],
      ['first', '503'],
      ['first', 'taken'],
      ['second', 'taken'],
    ]);
  });

  it('gives a message up after every attempt failed, records it, and goes on with the next', async () => {
    received.length = 0;
    failures.push(500, 500, 500);
    await contactWrites('doomed');
    await waitFor(async () => {
      const events = await relay.cli(['events', '--category', 'inbound', '--type', 'InboundWebhookAbandoned']);
      return events.stdout.includes('"reason":"The webhook answered 500"') ? true : undefined;
    }, 15_000, 'the abandonment');
    await contactWrites('after');
    const delivered = await waitFor(() => (taken().length >= 1 ? taken() : undefined), 10_000, 'the next message');
    expect(delivered.map((d) => JSON.parse(d.body).content)).toEqual(['after']);
    const abandoned = (await relay.cli(['events', '--category', 'inbound', '--type', 'InboundWebhookAbandoned'])).stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(abandoned.at(-1).data).toEqual({ messageId: expect.any(String), appId, attempts: 3, lastStatus: 500, reason: 'The webhook answered 500', abandonedAt: expect.any(String) });
  });

  it('counts attempts, failures by kind and messages given up on in /metrics', async () => {
    const text = await (await fetch(`${relay.url}/metrics`)).text();
    const value = (series: string) => Number(text.split('\n').find((line) => line.startsWith(`${series} `))?.split(' ')[1] ?? Number.NaN);
    expect(value('relay_webhook_attempts_total{outcome="delivered"}')).toBeGreaterThanOrEqual(4);
    expect(value('relay_webhook_attempts_total{outcome="failed"}')).toBeGreaterThanOrEqual(5);
    expect(value('relay_webhook_failures_total{kind="status"}')).toBeGreaterThanOrEqual(5);
    expect(value('relay_webhook_failures_total{kind="timeout"}')).toBe(0);
    expect(value('relay_webhooks_abandoned_total')).toBeGreaterThanOrEqual(1);
  });

  it('keeps the messages of a failing receiver for polls once the app is switched back to poll', async () => {
    received.length = 0;
    failures.push(...Array(50).fill(500));
    await contactWrites('kept for the poll');
    await waitFor(() => (received.length >= 1 ? true : undefined), 10_000, 'a failed attempt');
    expect((await dashboard(relay, account, 'POST', '/apps/update', { appId, deliveryType: 'poll' })).status).toBe(200);
    const polled = await waitFor(async () => {
      const res = await api(relay, 'GET', '/messages/poll', { key });
      return res.body.count > 0 ? res.body.messages : undefined;
    }, 10_000, 'the message on poll');
    expect(polled.map((m: { content: string }) => m.content)).toEqual(['kept for the poll']);
    failures.length = 0;
  });
});
