/**
 * The web dashboard's defects found on the way (issue 50), each held in a real browser (Chromium
 * through playwright-core) against a started Relay on the simulator: status that follows by
 * itself, errors beside their field in words, a phone's width, keys with their app, groups,
 * the pages Relay serves around the script (not found, favicon, signed out), and what is
 * simulated. Every page checked with axe at desktop and phone width (dashboard-checks.ts).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import type { Browser, Page } from 'playwright-core';
import { browserSkipReason, VIEWPORTS } from '../support/browser.ts';
import { axeViolations, focused, horizontalOverflow, screenshots, signedInContext } from '../support/dashboard-checks.ts';
import { relayWithBrowser, withRelayAndBrowser } from '../support/dashboard-relay.ts';
import type { RelayProcess } from '../support/relay-process.ts';
import { createAccount, createKey, dashboard, type Account } from '../support/account-fixture.ts';
import { FakeSignalCli } from '../support/fake-signal-cli.ts';

const skip = browserSkipReason();

describe.skipIf(skip !== '')('the web dashboard’s defects found on the way (issue 50)', () => {
  const suite = relayWithBrowser({ env: { PAYMENT_PROCESSOR: 'simulator', BILLING_RATE: '150', WEBHOOK_ALLOW_LOCAL: 'true' } });
  let relay: RelayProcess;
  let browser: Browser;
  let account: Account;
  let page: Page;
  let appId: string;

  beforeAll(async () => {
    ({ relay, browser } = suite);
    account = await createAccount(relay, 'defects@example.com');
    page = await (await signedInContext(relay, browser, account)).newPage();
  });

  const status = (messenger: string) => page.locator(`tr[data-messenger="${messenger}"] [data-status]`).innerText();

  it('follows provisioning and status on the app page without a reload (1), and names the messenger of each QR code (10)', async () => {
    await page.goto('/dashboard/apps');
    await page.getByLabel('Name', { exact: true }).fill('Live bot');
    await page.getByRole('checkbox', { name: 'Session' }).check();
    await page.getByRole('button', { name: 'Create app' }).click();
    await expect.poll(() => page.getByRole('heading', { name: 'Live bot' }).isVisible()).toBe(true);
    appId = page.url().split('/').at(-1)!;
    // No reload: the page reads the app again while it is seen.
    await expect.poll(async () => [await status('signal'), await status('simplex'), await status('session')], { timeout: 15_000 }).toEqual(['active', 'active', 'active']);
    const simplex = (await dashboard(relay, account, 'GET', '/apps')).body.items[0].messengers.find((m: { messenger: string }) => m.messenger === 'simplex');
    expect((await dashboard(relay, account, 'PUT', `/app-messengers/${simplex.id}`, { status: 'disabled' })).status).toBe(200);
    await expect.poll(() => status('simplex'), { timeout: 10_000 }).toBe('disabled');

    expect(await page.getByRole('heading', { level: 3 }).allInnerTexts()).toEqual(['SimpleX: scan to write to the bot', 'Session: scan to write to the bot']);
    expect(await page.locator('[data-bot-qr="session"]').getByRole('img', { name: "QR code of the Session bot's address" }).count()).toBe(1);
    // What is simulated is said on every page.
    expect(await page.locator('[data-simulated-badge]').innerText()).toBe('Test mode: Signal, SimpleX, Session and payments simulated');
    await screenshots(page, 'defects-app-detail');
  });

  it('says what is wrong with an ftp: or javascript: webhook URL beside the field, without WEBHOOK_ALLOW_LOCAL, and moves the focus there (3)', async () => {
    await page.getByRole('radio', { name: /Webhook/ }).check();
    for (const url of ['ftp://bots.example.com/hook', 'javascript:alert(1)']) {
      await page.getByLabel('Webhook URL').fill(url);
      await page.getByRole('button', { name: 'Save delivery' }).click();
      const error = page.locator('#webhook-url-error');
      await expect.poll(() => error.innerText().catch(() => '')).toMatch(/^The webhook URL must start with https:\/\/ \(or http:\/\/\): Relay does not post to (ftp|javascript): URLs\.$/);
      await expect.poll(() => focused(page)).toMatchObject({ id: 'webhook-url', describedBy: 'webhook-url-hint webhook-url-error' });
      expect(await page.getByRole('alert').count()).toBe(0);
    }
    await screenshots(page, 'defects-webhook-error');
  });

  it('keeps a refused contact id in its field, and offers no group on Session, saying why (6)', async () => {
    const group = page.locator('details.group', { hasText: 'Signal group' });
    await group.locator('summary').click();
    await group.getByLabel(/Add a contact/).fill('alice');
    await group.getByRole('button', { name: 'Add to the group' }).click();
    await expect.poll(() => group.locator('.field-error').innerText().catch(() => '')).toMatch(/^The contact id is wrong: expected /);
    expect(await group.getByLabel(/Add a contact/).inputValue()).toBe('alice');

    const session = page.locator('details[data-group="session"]');
    await session.locator('summary').click();
    expect(await session.innerText()).toContain('Session groups are not supported');
    expect(await session.getByRole('button').count()).toBe(0);
    await screenshots(page, 'defects-groups');
  });

  it('ticks the only app for a new key, refuses a key with no app, and explains each key type in a line (5)', async () => {
    await page.goto('/dashboard/keys');
    const box = page.getByRole('checkbox', { name: 'Live bot' });
    await expect.poll(() => box.isChecked()).toBe(true);
    expect(await page.locator('[data-key-types] li').allInnerTexts()).toEqual([
      expect.stringMatching(/^API key: /),
      expect.stringMatching(/^Webhook key \(bearer\): /),
      expect.stringMatching(/^Webhook key in a header: /),
    ]);
    await box.uncheck();
    await page.getByLabel('Name', { exact: true }).fill('no app');
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => page.locator('#key-apps-error').innerText().catch(() => '')).toBe('Tick at least one app: a key works only for the apps ticked here.');
    await expect.poll(() => focused(page)).toMatchObject({ id: `key-app-${appId}`, describedBy: 'key-apps-error' });
    expect((await dashboard(relay, account, 'GET', '/credentials')).body.items).toEqual([]);
    await box.check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await expect.poll(() => page.locator('[data-keys] tbody tr').count()).toBe(1);
    await screenshots(page, 'defects-keys');
  });

  it('at a phone’s width: tables show every column and action, long names wrap, an over-long name is refused with its limit (4)', async () => {
    await page.setViewportSize(VIEWPORTS.phone);
    const long = 'x'.repeat(300);
    await page.goto('/dashboard/apps');
    await page.getByLabel('Name', { exact: true }).fill('y'.repeat(10_000));
    expect(await page.locator('#app-name-error').innerText()).toBe('Too long: 10,000 characters, and at most 100 fit.');
    await page.getByRole('button', { name: 'Create app' }).click();
    await expect.poll(async () => (await focused(page)).id).toBe('app-name');
    expect((await dashboard(relay, account, 'GET', '/apps')).body.items).toHaveLength(1);
    await page.getByLabel('Name', { exact: true }).fill(long.slice(0, 100));
    await page.getByRole('button', { name: 'Create app' }).click();
    await expect.poll(() => page.getByRole('heading', { name: long.slice(0, 100) }).isVisible()).toBe(true);
    expect(await horizontalOverflow(page)).toBe(0);
    await page.goto('/dashboard/apps');
    await expect.poll(() => page.locator('[data-apps] li').count()).toBe(2);
    expect(await horizontalOverflow(page)).toBe(0);

    await page.goto('/dashboard/keys');
    await expect.poll(() => page.locator('[data-keys] tbody tr').count()).toBe(1);
    // Each cell is shown under its column's name, and the Roll and Delete buttons are on the screen.
    const row = page.locator('[data-keys] tbody tr').first();
    const labels = await row.locator('td').evaluateAll((cells: any[]) => cells.map((cell) => (globalThis as any).getComputedStyle(cell, '::before').content as string));
    expect(labels).toEqual(['"Name: "', '"Type: "', '"Key: "', '"Apps: "', '"Made: "', '"Last used: "', 'none']);
    expect(await row.innerText()).toMatch(/^no app\napi-key\nrly_.*\nLive bot\n.*\nnever\nRoll Delete$/);
    const button = await row.getByRole('button', { name: /^Delete the key/ }).boundingBox();
    expect(button!.x + button!.width).toBeLessThanOrEqual(VIEWPORTS.phone.width);
    expect(await horizontalOverflow(page)).toBe(0);
    // A key of the long-named app: its name wraps in the table too, at both widths.
    const longApp = (await dashboard(relay, account, 'GET', '/apps')).body.items.find((a: { name: string }) => a.name === long.slice(0, 100));
    await createKey(relay, account, [longApp.id]);
    await page.reload();
    await expect.poll(() => page.locator('[data-keys] tbody tr').count()).toBe(2);
    await screenshots(page, 'defects-long-names');
    await page.setViewportSize(VIEWPORTS.desktop);
  });

  it('serves a page of its own for an unknown dashboard path (404), a favicon, and asks nothing of the account API when signed out (9)', async () => {
    const missing = await fetch(`${relay.url}/dashboard/nope`);
    expect([missing.status, missing.headers.get('content-type')]).toEqual([404, 'text/html; charset=utf-8']);
    const icon = await fetch(`${relay.url}/dashboard/assets/favicon.svg`);
    expect([icon.status, icon.headers.get('content-type'), (await icon.text()).startsWith('<svg')]).toEqual([200, 'image/svg+xml', true]);

    for (const cookie of [undefined, 'rls_' + 'b'.repeat(43), 'bogus']) {
      const anonymous = await browser.newContext({ baseURL: relay.url, viewport: VIEWPORTS.desktop });
      if (cookie) await anonymous.addCookies([{ name: 'relay_session', value: cookie, url: relay.url }]);
      const visitor = await anonymous.newPage();
      const failed: string[] = [];
      visitor.on('response', (r) => void (r.status() >= 400 && failed.push(`${r.status()} ${r.url()}`)));
      visitor.on('console', (m) => void (m.type() === 'error' && failed.push(m.text())));
      await visitor.goto('/dashboard/apps');
      await expect.poll(() => visitor.getByRole('heading', { name: 'Sign in' }).isVisible()).toBe(true);
      expect(await visitor.locator('link[rel="icon"]').getAttribute('href')).toBe('/dashboard/assets/favicon.svg');
      await visitor.goto('/dashboard/nope');
      await expect.poll(() => visitor.getByRole('heading', { name: 'Page not found' }).isVisible()).toBe(true);
      expect(failed.filter((f) => !f.endsWith('/dashboard/nope') && !f.includes('404'))).toEqual([]);
      if (cookie === undefined) await screenshots(visitor, 'not-found-signed-out');
      await anonymous.close();
    }
    await page.goto('/dashboard/apps/x/y');
    await expect.poll(() => page.getByRole('heading', { name: 'Page not found' }).isVisible()).toBe(true);
    await screenshots(page, 'not-found');
  });

  it('moves the focus to the content with the skip link, on the dashboard’s pages and on the statistics pages (9)', async () => {
    for (const path of ['/dashboard/keys', '/dashboard/stats']) {
      await page.goto(path);
      await expect.poll(() => page.locator('h1').first().isVisible()).toBe(true);
      await page.keyboard.press('Tab');
      expect((await focused(page)).text).toBe('Skip to content');
      await page.keyboard.press('Enter');
      await expect.poll(async () => (await focused(page)).id).toBe('main');
    }
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe.skipIf(skip !== '')('the Signal link panel of a bot that got its account meanwhile (issue 50)', () => {
  it('says one thing at a time: never that the bot already has its identity above that it has no account yet (2)', async () => {
    const daemon = await new FakeSignalCli({ keepAliveMs: 200 }).start();
    daemon.addAccount('+15550006060');
    await withRelayAndBrowser({ env: { SIGNAL_CLI_URL: daemon.httpUrl } }, async (relay, browser) => {
      const account = await createAccount(relay, 'signal-panel@example.com');
      const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Signal bot', protocol: ['signal'] });
      const page = await (await signedInContext(relay, browser, account)).newPage();
      await page.goto(`/dashboard/apps/${created.body.id}`);
      const panel = page.locator('[data-signal-link]');
      await expect.poll(() => panel.innerText().catch(() => '')).toContain('The Signal bot has no account yet');
      await screenshots(page, 'signal-no-account');

      const bound = await relay.cli(['signal', 'bind', '--app-messenger', created.body.messengers[0].id, '--account', '+15550006060']);
      expect(bound.code, bound.stderr).toBe(0);
      // Asked to link though the bot has its account by now (unless the page read the app again first).
      await page.getByRole('button', { name: 'Link a Signal account' }).click({ timeout: 2000 }).catch(() => undefined);
      const seen: string[] = [];
      await expect
        .poll(async () => {
          const text = (await panel.count()) ? await panel.innerText({ timeout: 500 }).catch(() => '') : '';
          seen.push(text);
          return text;
        }, { timeout: 10_000 })
        .toBe('');
      expect(seen.filter((text) => text.includes('already has the Signal identity') && text.includes('has no account yet'))).toEqual([]);
      expect(await page.locator('tr[data-messenger="signal"] code').innerText()).toBe('+15550006060');
      expect(await page.locator('tr[data-messenger="signal"] [data-status]').innerText()).toBe('active');
    }).finally(() => daemon.close());
  });
});
