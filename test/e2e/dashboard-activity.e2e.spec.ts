/**
 * Issue 50 §1 in a real browser against a started Relay on the simulator: an app's message log
 * (outbound delivered and abandoned, inbound received then polled, filtered, no contact id or body
 * on the page), and its webhook's attempts, health, test event and "Retry now".
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { beforeAll, afterAll, describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { Webhook } from 'standardwebhooks';
import { browserSkipReason } from '../support/browser.ts';
import { screenshots, signedInContext } from '../support/dashboard-checks.ts';
import { relayWithBrowser } from '../support/dashboard-relay.ts';
import { api, createAccount, createApp, createKey, dashboard, pollMessages, type Account } from '../support/account-fixture.ts';
import type { RelayProcess } from '../support/relay-process.ts';

const skip = browserSkipReason();

describe.skipIf(skip !== '')('the app page’s message log and webhook (issue 50 §1)', () => {
  const suite = relayWithBrowser({
    env: { WEBHOOK_ALLOW_LOCAL: 'true', WEBHOOK_BACKOFF_BASE_MS: '600000', WEBHOOK_BACKOFF_MAX_MS: '600000', WEBHOOK_IDLE_POLL_MS: '100', DELIVERY_BACKOFF_BASE_MS: '100', DELIVERY_BACKOFF_FACTOR: '1' },
  });
  let relay: RelayProcess;
  let account: Account;
  let page: Page;
  let appId: string;
  let key: string;
  let receiver: http.Server;
  const received: Array<{ headers: http.IncomingHttpHeaders; body: string }> = [];
  /** Statuses to answer next, in order; 204 once they run out. */
  const answers: number[] = [];

  const own = (method: string, path: string, body?: unknown, who: Account = account) =>
    fetch(`${relay.url}${path}`, {
      method,
      headers: { cookie: `relay_session=${who.session}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    }).then(async (res) => ({ status: res.status, body: (await res.json()) as any }));
  const statusOf = (messageId: string) => page.locator(`tr[data-message="${messageId}"]`).getAttribute('data-log-status').catch(() => null);

  beforeAll(async () => {
    relay = suite.relay;
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        received.push({ headers: req.headers, body });
        res.writeHead(answers.shift() ?? 204).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    account = await createAccount(relay, 'activity@example.com');
    appId = (await createApp(relay, account, ['signal', 'session'], 'Log bot')).appId;
    key = (await createKey(relay, account, [appId])).secret;
    page = await (await signedInContext(relay, suite.browser, account)).newPage();
  });
  afterAll(() => new Promise((resolve) => receiver?.close(resolve)));

  it('lists each message with its status, attempts and reasons, filters it, and shows no contact id or body', async () => {
    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550002222', '--times', '-1'])).code).toBe(0);
    const sent = await api(relay, 'POST', '/messages/send', {
      key,
      body: { messages: [{ appId, messenger: 'signal', contactId: '+15550001111', message: 'secret text one' }, { appId, messenger: 'signal', contactId: '+15550002222', message: 'secret text two' }] },
    });
    expect(sent.status).toBe(202);
    const [delivered, abandoned] = sent.body.successfulMessages.map((m: { messageId: string }) => m.messageId);
    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'session', '--contact', `05${'a'.repeat(64)}`, '--text', 'inbound secret'])).code).toBe(0);

    await page.goto(`/dashboard/apps/${appId}`);
    await expect.poll(() => statusOf(delivered), { timeout: 15_000 }).toBe('delivered');
    await expect.poll(() => statusOf(abandoned), { timeout: 15_000 }).toBe('abandoned');
    const inbound = page.locator('tr[data-message]').filter({ has: page.locator('td[data-label="Messenger"]', { hasText: 'Session' }) });
    await expect.poll(() => inbound.getAttribute('data-log-status'), { timeout: 15_000 }).toBe('received');
    const abandonedRow = page.locator(`tr[data-message="${abandoned}"]`);
    expect(await abandonedRow.locator('[data-status-text]').innerText()).toMatch(/^abandoned: .+/);
    await abandonedRow.locator('summary').click();
    expect(await abandonedRow.locator('summary').innerText()).toBe('3');
    expect(await abandonedRow.locator('[data-steps] li').allInnerTexts()).toEqual([
      expect.stringMatching(/: accepted$/),
      expect.stringMatching(/: attempt failed \(attempt 1\): .+; next at /),
      expect.stringMatching(/: attempt failed \(attempt 2\): .+; next at /),
      expect.stringMatching(/: attempt failed \(attempt 3\): .+/),
      expect.stringMatching(/: abandoned: .+/),
    ]);
    // A poll takes the inbound message: its key is forgotten as finished, and the log says polled.
    expect(await pollMessages(relay, key, 1)).toHaveLength(1);
    await expect.poll(() => inbound.getAttribute('data-log-status'), { timeout: 15_000 }).toBe('polled');

    const text = await page.locator('[data-message-log]').innerText();
    for (const secret of ['+15550001111', '+15550002222', 'secret text', 'inbound secret', 'aaaaaaaa']) expect(text).not.toContain(secret);
    expect(await page.locator('tr[data-message] td[data-label="Contact"]').allInnerTexts()).toEqual(['sealed', 'sealed', 'sealed']);
    await screenshots(page, 'activity-message-log');

    await page.locator('[data-message-log]').getByLabel('Status').selectOption('abandoned');
    await expect.poll(() => page.locator('tr[data-message]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-message')))).toEqual([abandoned]);
    await page.locator('[data-message-log]').getByLabel('Status').selectOption('');
    await page.locator('[data-message-log]').getByLabel('Messenger').selectOption('session');
    await expect.poll(() => page.locator('tr[data-message]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-log-status')))).toEqual(['polled']);
    await page.locator('[data-message-log]').getByLabel('Status').selectOption('delivered');
    await expect.poll(() => page.locator('[data-log-empty]').innerText().catch(() => '')).toBe('No message matches this filter.');
  });

  it('answers bad filters in words, and no other user’s log', async () => {
    expect(await own('GET', `/dashboard/messages/${appId}?status=lost`)).toEqual({ status: 400, body: { success: false, error: 'Invalid status. Must be one of: accepted, deferred, failed, delivered, abandoned, received, polled, expired' } });
    expect(await own('GET', `/dashboard/messages/${appId}?messenger=telegram`)).toEqual({ status: 400, body: { success: false, error: 'Invalid messenger. Must be one of: signal, simplex, session' } });
    const other = await createAccount(relay, 'someone-else@example.com');
    expect(await own('GET', `/dashboard/messages/${appId}`, undefined, other)).toEqual({ status: 404, body: { success: false, error: 'App not found' } });
    expect(await own('POST', '/dashboard/webhook/retry', { appId })).toEqual({ status: 400, body: { success: false, error: 'This app is not delivered by webhook' } });
    expect(await own('POST', '/dashboard/webhook/test', {})).toEqual({ status: 400, body: { success: false, error: 'Missing required field: appId' } });
    const crossOrigin = await fetch(`${relay.url}/dashboard/webhook/retry`, { method: 'POST', headers: { cookie: `relay_session=${account.session}`, 'content-type': 'application/json', origin: 'https://evil.example' }, body: JSON.stringify({ appId }) });
    expect(await crossOrigin.json()).toEqual({ success: false, error: 'Cross-origin requests are not allowed' });
  });

  it('shows each webhook attempt, says the webhook is failing, sends a signed test event, and retries a waiting message now', async () => {
    const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const updated = await dashboard(relay, account, 'POST', '/apps/update', { appId, deliveryType: 'webhook', webhookUrl: url });
    expect(updated.status).toBe(200);
    const signingSecret = updated.body.webhookSigningSecret as string;
    answers.push(500);
    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550003333', '--text', 'to the hook'])).code).toBe(0);

    await page.goto(`/dashboard/apps/${appId}`);
    const health = page.locator('[data-webhook-health]');
    await expect.poll(() => health.getAttribute('data-webhook-health'), { timeout: 15_000 }).toBe('failing');
    expect(await health.innerText()).toMatch(/^Failing: the last 1 attempt failed, since .+\. Messages wait in order until it takes them\.$/);
    const first = page.locator('[data-webhook-attempts] tbody tr');
    expect(await first.count()).toBe(1);
    expect(await first.locator('td[data-label="Outcome"]').innerText()).toMatch(/500/);
    expect(await first.locator('td[data-label="Duration"]').innerText()).toMatch(/^\d+ ms$/);
    await screenshots(page, 'activity-webhook-failing');

    // The backoff is ten minutes: only "Retry now" brings the next attempt.
    await page.getByRole('button', { name: 'Retry now' }).click();
    await expect.poll(() => health.getAttribute('data-webhook-health'), { timeout: 15_000 }).toBe('ok');
    expect(received).toHaveLength(2);
    expect(await page.locator('[data-webhook-attempts] tbody tr').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-attempt-ok')))).toEqual(['true', 'false']);

    await page.getByRole('button', { name: 'Send a test event' }).click();
    await expect.poll(() => page.locator('[data-test-outcome]').getAttribute('data-test-outcome').catch(() => null)).toBe('ok');
    const test = received.at(-1)!;
    expect(test.headers['relay-webhook-test']).toBe('true');
    const verified = new Webhook(signingSecret).verify(test.body, test.headers as Record<string, string>) as Record<string, unknown>;
    expect(verified).toMatchObject({ type: 'relay.test', test: true, appId, messenger: 'signal', contactId: 'relay-test-contact' });
    expect(await page.locator('[data-test-outcome]').innerText()).toMatch(/^Test event test_[0-9a-f]{24}: the webhook took it \(204\) in \d+ ms\./);
    await screenshots(page, 'activity-webhook-test');
  });

  it('sends a test message the public send’s way, refuses what the send refuses in its words, and shows a quickstart with the ids filled in', async () => {
    await page.goto(`/dashboard/apps/${appId}`);
    const form = page.locator('[data-test-message]');
    await form.getByLabel('Contact id').fill('+15550004444');
    await form.getByLabel('Message').fill('   ');
    await form.getByRole('button', { name: 'Send the test message' }).click();
    await expect.poll(() => form.getByRole('alert').innerText().catch(() => '')).toContain('Missing required field: message');
    await form.getByLabel('Message').fill('from the page');
    await form.getByRole('button', { name: 'Send the test message' }).click();
    const sent = form.locator('[data-test-sent]');
    await expect.poll(() => sent.getAttribute('data-test-sent').catch(() => null)).toMatch(/^[0-9a-f]{32}$/);
    const messageId = (await sent.getAttribute('data-test-sent'))!;
    await expect.poll(() => statusOf(messageId), { timeout: 15_000 }).toBe('delivered');
    const outbox = await relay.cli(['simulate', 'outbox', '--message', messageId]);
    expect(outbox.stdout).toContain('from the page');

    expect(await own('POST', '/dashboard/messages/send', { appId, messenger: 'telegram', contactId: 'x', message: 'hi' })).toEqual({ status: 400, body: { success: false, error: 'Invalid messenger. Must be one of: signal, simplex, session' } });
    expect(await own('POST', '/dashboard/messages/send', { appId, messenger: 'signal', contactId: '', message: 'hi' })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: contactId' } });
    expect(await own('POST', '/dashboard/messages/send', { appId, messenger: 'signal', contactId: 'x', message: 'y'.repeat(10_001) })).toEqual({ status: 400, body: { success: false, error: 'Message exceeds 10000 character limit' } });
    const other = await createAccount(relay, 'not-the-owner@example.com');
    expect(await own('POST', '/dashboard/messages/send', { appId, messenger: 'signal', contactId: 'x', message: 'hi' }, other)).toEqual({ status: 404, body: { success: false, error: 'App not found' } });

    const quickstart = page.locator('[data-quickstart]');
    expect(await quickstart.locator('[data-quickstart-app]').innerText()).toBe(appId);
    expect(await quickstart.getByRole('link', { name: 'Make an API key for this app' }).getAttribute('href')).toBe(`/dashboard/keys?app=${appId}`);
    expect(await quickstart.getByRole('link', { name: 'the API reference' }).getAttribute('href')).toBe('/docs');
    expect(await quickstart.locator('[data-snippet="curl"]').innerText()).toContain(`"appId":"${appId}"`);
    expect(await quickstart.locator('[data-snippet="typescript"]').innerText()).toContain(`appId: '${appId}'`);
    expect(await quickstart.locator('[data-snippet="curl"]').innerText()).toContain(`${relay.url}/api/v1/messages/send`);
    await screenshots(page, 'activity-test-message-quickstart');
  });
});
