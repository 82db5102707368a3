/**
 * The web dashboard in a real browser (Chromium through playwright-core), against a started
 * Relay on its embedded default with the simulator connectors and the payment simulator: each
 * flow a user has, each with a failed case, and a screenshot of each page at desktop and phone
 * width (test-artifacts/dashboard/). The statistics pages have a suite of their own
 * (dashboard-statistics.e2e.spec.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { browserSkipReason, VIEWPORTS } from '../support/browser.ts';
import { focused, screenshots } from '../support/dashboard-checks.ts';
import { relayWithBrowser, withRelayAndBrowser } from '../support/dashboard-relay.ts';
import type { RelayProcess } from '../support/relay-process.ts';
import { createAccount, dashboard } from '../support/account-fixture.ts';
import { FakeSignalCli } from '../support/fake-signal-cli.ts';

const skip = browserSkipReason();

/** A one-time sign-in link for the address, as an operator makes one. */
const signInLink = async (relay: RelayProcess, email: string) => {
  const made = await relay.cli(['session', 'link', '--email', email]);
  expect(made.code, made.stderr).toBe(0);
  return made.stdout.trim();
};

describe.skipIf(skip !== '')('the web dashboard in a browser', () => {
  const suite = relayWithBrowser({ env: { PAYMENT_PROCESSOR: 'simulator', BILLING_RATE: '150', PAYMENT_POLL_INTERVAL_MS: '200' } });
  let relay: RelayProcess;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;

  beforeAll(async () => {
    ({ relay, browser } = suite);
    context = await browser.newContext({ viewport: VIEWPORTS.desktop, baseURL: relay.url });
    context.setDefaultTimeout(15_000);
    page = await context.newPage();
  });

  it('shows how to sign in without a mail server, refuses a used link in plain words, and signs in with a fresh one', async () => {
    await page.goto('/dashboard');
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    expect(await page.locator('[data-no-mail]').innerText()).toContain('npx relay session link --email you@example.com');
    await screenshots(page, 'sign-in');

    const link = (await signInLink(relay, 'owner@example.com')).replace(/^http:\/\/localhost:\d+/, relay.url);
    // Following a link (as a mail scanner does) uses nothing up; its page's button does (issue 47).
    expect((await fetch(link, { redirect: 'manual' })).headers.get('set-cookie')).toBeNull();
    expect((await fetch(link, { method: 'POST' })).status).toBe(200);
    await page.goto(link);
    await expect.poll(() => page.getByRole('alert').first().innerText()).toContain('That sign-in link was used already: ask for a new one.');

    await page.goto((await signInLink(relay, 'owner@example.com')).replace(/^http:\/\/localhost:\d+/, relay.url));
    await expect.poll(() => page.getByRole('heading', { name: 'Finish signing in' }).isVisible()).toBe(true);
    // The link is not left in the address bar.
    expect(new URL(page.url()).hash).toBe('');
    await screenshots(page, 'sign-in-confirm');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Apps' }).isVisible()).toBe(true);
    expect(await page.locator('.who').innerText()).toBe('owner@example.com');
  });

  it('creates an app on Signal and SimpleX, shows each bot address, status and health, the SimpleX address as a QR code, and disables and enables a messenger', async () => {
    await page.getByLabel('Name', { exact: true }).fill('Support bot');
    await page.getByRole('checkbox', { name: 'Session' }).uncheck();
    await page.getByRole('button', { name: 'Create app' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Support bot' }).isVisible()).toBe(true);
    expect(page.url()).toMatch(/\/dashboard\/apps\/app_[0-9a-f]+$/);
    // The simulator provisions both bots at once.
    await expect
      .poll(async () => {
        await page.reload();
        return page.locator('tr[data-messenger="simplex"] [data-status]').innerText().catch(() => '');
      }, { timeout: 20_000 })
      .toBe('active');
    expect(await page.locator('tr[data-messenger="signal"] [data-health]').innerText()).toBe('healthy');
    const address = await page.locator('tr[data-messenger="simplex"] code').innerText();
    expect(address.length).toBeGreaterThan(0);
    expect(await page.locator('.qr figcaption code').innerText()).toBe(address);
    expect(await page.getByRole('img', { name: "QR code of the SimpleX bot's address" }).locator('svg').count()).toBe(1);
    await screenshots(page, 'app-detail');

    await page.getByRole('button', { name: 'Disable SimpleX' }).click();
    await expect.poll(() => page.locator('tr[data-messenger="simplex"] [data-status]').innerText()).toBe('disabled');
    await page.getByRole('button', { name: 'Enable SimpleX' }).click();
    await expect.poll(() => page.locator('tr[data-messenger="simplex"] [data-status]').innerText()).toBe('active');
  });

  it('refuses a webhook URL on this machine in the interface’s words, then switches to webhook delivery and shows the signing secret once', async () => {
    await page.getByRole('radio', { name: /Webhook/ }).check();
    await page.getByLabel('Webhook URL').fill('http://127.0.0.1:9/hook');
    await page.getByRole('button', { name: 'Save delivery' }).click();
    // Beside the field, in words, with the focus on the field it describes.
    await expect.poll(() => page.locator('#webhook-url-error').innerText().catch(() => '')).toMatch(/^The webhook URL must use https \(an operator allows http with WEBHOOK_ALLOW_LOCAL=true\)$/);
    await expect.poll(async () => (await focused(page)).id).toBe('webhook-url');

    await page.getByLabel('Webhook URL').fill('https://bots.example.com/relay-hook');
    await page.getByRole('button', { name: 'Save delivery' }).click();
    await expect.poll(() => page.locator('[data-secret]').innerText()).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    await screenshots(page, 'app-webhook');
    await page.reload();
    await expect.poll(() => page.getByRole('heading', { name: 'Support bot' }).isVisible()).toBe(true);
    expect(await page.locator('[data-secret]').count()).toBe(0);
    expect(await page.getByRole('radio', { name: /Webhook/ }).isChecked()).toBe(true);
  });

  it("manages the app-messenger's group: adds a member, makes them admin, refuses a contact the messenger refuses", async () => {
    await page.locator('details.group', { hasText: 'Signal group' }).locator('summary').click();
    const group = page.locator('details.group', { hasText: 'Signal group' });
    await group.getByLabel(/Add a contact/).fill('alice');
    await group.getByRole('button', { name: 'Add to the group' }).click();
    await expect.poll(() => group.locator('.field-error').innerText().catch(() => '')).toMatch(/^The contact id is wrong: expected /);
    await group.getByLabel(/Add a contact/).fill('+15550001111');
    await group.getByRole('button', { name: 'Add to the group' }).click();
    await expect.poll(() => group.locator('[data-members]').innerText(), { timeout: 15_000 }).toContain('+15550001111');
    await group.getByRole('button', { name: 'Make admin' }).click();
    // Done once it says so (the members' "Make admin" button holds the word too).
    await expect.poll(() => group.getByRole('status').innerText(), { timeout: 15_000 }).toMatch(/^Made admin/);
    await expect.poll(() => group.locator('[data-members] td[data-label="Role"]').innerText(), { timeout: 15_000 }).toBe('admin');
    // Showing the invite link only reads it (issue 47); turning it on is a button of its own.
    await group.getByRole('button', { name: 'Show the invite link' }).click();
    await expect.poll(() => group.getByRole('status').innerText(), { timeout: 15_000 }).toContain('The group has no invite link yet');
    await group.getByRole('button', { name: 'Turn the invite link on' }).click();
    await expect.poll(() => group.getByRole('img', { name: "QR code of the Signal group's invite link" }).count(), { timeout: 15_000 }).toBe(1);
    await screenshots(page, 'app-group');
  });

  it('creates an API key of each type and shows each secret once; a header name that is not one is refused', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'API keys' }).isVisible()).toBe(true);
    await page.getByLabel('Type').selectOption('webhook-header');
    await page.getByLabel('Name', { exact: true }).fill('bad header');
    await page.getByLabel('Header name').fill('X Relay Key');
    await page.getByLabel('Webhook URL').fill('https://bots.example.com/relay-hook');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => page.locator('#key-header-error').innerText().catch(() => '')).toContain('The header name must be an HTTP header name');

    const made: string[] = [];
    for (const [type, name] of [
      ['api-key', 'bot key'],
      ['webhook-bearer', 'hook bearer'],
      ['webhook-header', 'hook header'],
    ] as const) {
      await page.getByLabel('Type').selectOption(type);
      await page.getByLabel('Name', { exact: true }).fill(name);
      if (type === 'webhook-header') await page.getByLabel('Header name').fill('X-Relay-Key');
      const box = page.getByRole('checkbox', { name: 'Support bot' });
      if (!(await box.isChecked())) await box.check();
      await page.getByRole('button', { name: 'Create key' }).click();
      await expect.poll(() => page.locator('.secret strong').innerText()).toContain(name);
      made.push(await page.locator('[data-secret]').innerText());
    }
    expect(new Set(made).size).toBe(3);
    const verified = await fetch(`${relay.url}/api/v1/auth/verify`, { headers: { authorization: `Bearer ${made[0]}` } });
    expect(verified.status).toBe(200);
    await screenshots(page, 'keys');
    await page.reload();
    await expect.poll(() => page.locator('[data-keys] tbody tr').count()).toBe(3);
    expect(await page.locator('[data-secret]').count()).toBe(0);
  });

  it('offers no channel that cannot reach the user, links a Signal contact, then saves an alert on Signal', async () => {
    await page.getByRole('link', { name: 'Notifications' }).click();
    const email = page.getByRole('checkbox', { name: 'Invoices by E-mail' });
    const signal = page.getByRole('checkbox', { name: 'Invoices by Signal' });
    await expect.poll(() => email.isVisible()).toBe(true);
    // No mail server here, and no contact linked yet: neither is offered, and each says why.
    expect([await email.isDisabled(), await email.isChecked(), await signal.isDisabled()]).toEqual([true, false, true]);
    const hints = await page.locator('[data-channel-hints]').innerText();
    expect(hints).toContain('E-mail is not offered: this Relay has no mail server');
    expect(hints).toContain('Signal: link a Signal contact of yours below to get alerts there.');

    await page.getByRole('button', { name: 'Link a contact' }).click();
    await expect.poll(() => page.locator('[data-command]').innerText()).toMatch(/^\/link [0-9A-Z]{4}-[0-9A-Z]{4}$/);
    await screenshots(page, 'notifications');
    const command = await page.locator('[data-command]').innerText();
    const appId = await page.evaluate(async () => ((await (await fetch('/dashboard/api/dashboard/apps')).json()) as { items: Array<{ id: string }> }).items[0]!.id);
    const sent = await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550009999', '--text', command]);
    expect(sent.code, sent.stderr).toBe(0);
    await expect.poll(() => page.getByRole('status').first().innerText(), { timeout: 15_000 }).toBe('The contact is linked.');
    await expect.poll(() => signal.isDisabled()).toBe(false);
    const was = await signal.isChecked();
    await signal.setChecked(!was);
    await page.getByRole('button', { name: 'Save preferences' }).click();
    await expect.poll(() => page.getByRole('status').first().innerText()).toBe('Preferences saved.');
    await page.reload();
    await expect.poll(() => signal.isChecked()).toBe(!was);
  });

  it('buys the paid plan through an invoice whose QR code is shown, and follows it from pending to confirming to paid', async () => {
    await page.getByRole('link', { name: 'Billing' }).click();
    await expect.poll(() => page.getByRole('button', { name: 'Make an invoice' }).isVisible()).toBe(true);
    expect(await page.locator('[data-tier]').innerText()).toContain('Free');
    await page.getByRole('button', { name: 'Make an invoice' }).click();
    await expect.poll(() => page.locator('[data-status]').first().getAttribute('data-status')).toBe('pending');
    expect(await page.getByRole('img', { name: /QR code to pay/ }).count()).toBe(1);
    const uri = await page.locator('.qr figcaption code').innerText();
    const invoices = await page.evaluate(async () => (await (await fetch('/dashboard/api/dashboard/invoices')).json()) as { items: Array<{ paymentUri: string }> });
    expect(uri).toBe(invoices.items[0]!.paymentUri);
    // The plan in words, the URI as a wallet link, and a button that copies it.
    expect(await page.locator('[data-invoice]').first().innerText()).toMatch(/^Paid, monthly: /);
    expect([uri, await page.locator('[data-wallet-link]').getAttribute('href')]).toEqual([expect.stringMatching(/^[a-z][a-z0-9+.-]*:/), uri]);
    await context.grantPermissions(['clipboard-read', 'clipboard-write']);
    await page.getByRole('button', { name: 'Copy the payment URI' }).click();
    await expect.poll(() => page.evaluate('navigator.clipboard.readText()')).toBe(uri);
    await screenshots(page, 'billing');
    const invoiceId = await page.locator('[data-invoice]').first().getAttribute('data-invoice');
    const paid = await relay.cli(['simulate', 'pay', '--invoice', invoiceId!, '--confirmations', '0']);
    expect(paid.code, paid.stderr).toBe(0);
    await expect.poll(() => page.locator('[data-status]').first().getAttribute('data-status'), { timeout: 20_000 }).toBe('confirming');
    const txid = /[0-9a-f]{64}/.exec(paid.stdout)?.[0];
    expect((await relay.cli(['simulate', 'confirm', '--txid', txid!, '--confirmations', '10'])).code).toBe(0);
    await expect.poll(() => page.locator('[data-status]').first().getAttribute('data-status'), { timeout: 20_000 }).toBe('paid');
    await expect.poll(() => page.locator('[data-tier]').innerText()).toContain('Paid');
    // Nothing to buy while the paid time runs.
    expect([await page.getByRole('heading', { name: 'Buy the paid plan' }).count(), await page.locator('[data-paying]').innerText()]).toEqual([0, expect.stringMatching(/^You are on the paid plan until /)]);
  });

  it('shows the recovery code once, says another user’s app is not found, and signs out everywhere', async () => {
    await page.getByRole('link', { name: 'Account' }).click();
    page.once('dialog', (dialog) => void dialog.accept());
    await page.getByRole('button', { name: 'Make a new recovery code' }).click();
    await expect.poll(() => page.locator('[data-secret]').innerText()).toMatch(/^[0-9A-Z]{5}(-[0-9A-Z]{5}){3}$/);
    await screenshots(page, 'account');

    // Another user's app, by its id: not found, whoever asks.
    const other = await browser.newContext({ baseURL: relay.url });
    const theirs = await other.newPage();
    await theirs.goto((await signInLink(relay, 'other@example.com')).replace(/^http:\/\/localhost:\d+/, relay.url));
    await theirs.getByRole('button', { name: 'Sign in' }).click();
    await expect.poll(() => theirs.getByRole('heading', { name: 'Apps' }).isVisible()).toBe(true);
    await theirs.goto(page.url().replace('/account', '/apps'));
    const appPath = await page.evaluate(async () => {
      const res = await fetch('/dashboard/api/dashboard/apps');
      return `/dashboard/apps/${((await res.json()) as { items: Array<{ id: string }> }).items[0]!.id}`;
    });
    await theirs.goto(appPath);
    await expect.poll(() => theirs.getByRole('heading', { name: 'App not found' }).isVisible()).toBe(true);
    await other.close();

    await page.getByRole('button', { name: 'Sign out everywhere' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    // The session is over: another page asks to sign in again.
    await page.goto('/dashboard/keys');
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
  });

  it('is usable from the keyboard: a skip link, and every control reachable with Tab', async () => {
    await page.goto('/dashboard');
    await expect.poll(() => page.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
    const focused = () => page.evaluate('document.activeElement && (document.activeElement.id || document.activeElement.textContent) || ""') as Promise<string>;
    await page.keyboard.press('Tab');
    expect(await focused()).toBe('Skip to content');
    const reached = new Set<string>();
    for (let i = 0; i < 12; i++) {
      await page.keyboard.press('Tab');
      reached.add(await focused());
    }
    expect([...reached]).toEqual(expect.arrayContaining(['Get a sign-in code', 'recover-email', 'recover-code', 'Sign in with the recovery code']));
  });
});

describe.skipIf(skip !== '')('linking a Signal account from the dashboard', () => {
  it('shows the QR code of the link signal-cli gives, binds the account the phone linked, and refuses another user’s app-messenger', async () => {
    const daemon = await new FakeSignalCli({ keepAliveMs: 200 }).start();
    await withRelayAndBrowser({ env: { SIGNAL_CLI_URL: daemon.httpUrl } }, async (relay, browser) => {
      const account = await createAccount(relay, 'signal-owner@example.com');
      const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Signal bot', protocol: ['signal'] });
      const appMessengerId = created.body.messengers[0].id as string;
      const context = await browser.newContext({ baseURL: relay.url, viewport: VIEWPORTS.desktop });
      context.setDefaultTimeout(15_000);
      await context.addCookies([{ name: 'relay_session', value: account.session, url: relay.url }]);
      const page = await context.newPage();
      await page.goto(`/dashboard/apps/${created.body.id}`);
      await page.getByRole('button', { name: 'Link a Signal account' }).click();
      const shown = page.getByRole('img', { name: "QR code to link the Signal bot to your phone's account" });
      await expect.poll(() => shown.count()).toBe(1);
      const uri = await page.locator('[data-signal-link] figcaption code').innerText();
      expect(uri).toMatch(/^sgnl:\/\/linkdevice\?uuid=/);
      // The page shows the URI as soon as startLink answers; finishLink (which waits for the phone) is sent just after.
      await expect.poll(() => daemon.pendingLinks).toEqual([uri]);
      await screenshots(page, 'signal-link');

      // Another user cannot link (or read) this app-messenger.
      const other = await createAccount(relay, 'someone-else@example.com');
      const refused = await fetch(`${relay.url}/dashboard/signal/link`, { method: 'POST', headers: { cookie: other.cookie, 'content-type': 'application/json' }, body: JSON.stringify({ appMessengerId }) });
      expect({ status: refused.status, body: await refused.json() }).toEqual({ status: 400, body: { success: false, error: 'Invalid appMessengerId: not a Signal app-messenger of yours' } });
      const crossOrigin = await fetch(`${relay.url}/dashboard/signal/link`, { method: 'POST', headers: { cookie: account.cookie, 'content-type': 'application/json', origin: 'https://evil.example' }, body: JSON.stringify({ appMessengerId }) });
      expect({ status: crossOrigin.status, body: await crossOrigin.json() }).toEqual({ status: 400, body: { success: false, error: 'Cross-origin requests are not allowed' } });

      daemon.scan(uri, '+15550004444');
      // Once linked, the page reloads the app: the bot's address is the account, and the link panel is gone.
      await expect.poll(() => page.locator('tr[data-messenger="signal"] code').innerText().catch(() => ''), { timeout: 15_000 }).toBe('+15550004444');
      expect(await page.locator('[data-signal-link]').count()).toBe(0);
    }).finally(() => daemon.close());
  });
});

describe.skipIf(skip !== '')('the web dashboard when the account backend does not answer', () => {
  it('shows the 502 in plain words with a retry hint, never a blank page', async () => {
    await withRelayAndBrowser({ role: 'api', env: { DASHBOARD_BACKEND_URL: 'http://127.0.0.1:9' } }, async (relay, browser) => {
      const context = await browser.newContext({ baseURL: relay.url });
      // A live session (the page asks the account API only for one; without it the proxy answers 400 itself).
      const account = await createAccount(relay, 'backend-down@example.com');
      await context.addCookies([{ name: 'relay_session', value: account.session, url: relay.url }]);
      const page = await context.newPage();
      page.setDefaultTimeout(15_000);
      await page.goto('/dashboard/apps');
      await expect.poll(() => page.getByRole('alert').innerText()).toContain('did not answer (502). Try again in a moment.');
      expect(await page.getByRole('button', { name: 'Try again' }).isVisible()).toBe(true);
      await screenshots(page, 'backend-down');
    });
  });
});
