/**
 * Issue 50 §1, "Keys", in a real browser against a started Relay: each key's last use ("never"
 * until used), and rolling a key from its row (the overlap chosen, the new secret shown once, until
 * when the old one works), with a failed roll (the key was deleted meanwhile). axe and no overflow
 * at both widths on each state, screenshots kept (dashboard-checks.ts).
 */
import { describe, expect, it, beforeAll } from 'vitest';
import type { Page } from 'playwright-core';
import { browserSkipReason } from '../support/browser.ts';
import { focused, screenshots, signedInContext } from '../support/dashboard-checks.ts';
import { relayWithBrowser } from '../support/dashboard-relay.ts';
import { api, createAccount, createApp, createKey, dashboard, type Account } from '../support/account-fixture.ts';
import type { RelayProcess } from '../support/relay-process.ts';

const skip = browserSkipReason();

describe.skipIf(skip !== '')('the keys page: last use and rolling a key (issue 50 §1)', () => {
  const suite = relayWithBrowser();
  let relay: RelayProcess;
  let account: Account;
  let page: Page;
  let appId: string;
  let used: { credentialId: string; secret: string };
  let unused: { credentialId: string; secret: string };

  const row = (credentialId: string) => page.locator(`tr[data-key="${credentialId}"]`);
  const lastUsed = (credentialId: string) => row(credentialId).locator('[data-last-used]').getAttribute('data-last-used').catch(() => null);

  beforeAll(async () => {
    relay = suite.relay;
    account = await createAccount(relay, 'keys@example.com');
    appId = (await createApp(relay, account, ['signal'], 'Keys bot')).appId;
    used = await createKey(relay, account, [appId]);
    unused = await createKey(relay, account, [appId], 'webhook-bearer', { webhookUrl: 'https://hooks.example.com/relay', name: 'hook key' });
    page = await (await signedInContext(relay, suite.browser, account)).newPage();
  });

  it('shows when each key was last used, or never', async () => {
    const before = Date.now();
    expect((await api(relay, 'GET', '/auth/verify', { key: used.secret })).status).toBe(200);
    await page.goto('/dashboard/keys');
    await expect.poll(() => page.getByRole('columnheader', { name: 'Last used' }).isVisible()).toBe(true);
    // The use is recorded behind the answer: the page shows it once read again.
    await expect
      .poll(
        async () => {
          await page.reload();
          return lastUsed(used.credentialId);
        },
        { timeout: 15_000, interval: 250 },
      )
      .toMatch(/^\d{4}-/);
    const at = Date.parse((await lastUsed(used.credentialId))!);
    expect(at).toBeGreaterThanOrEqual(before - 1000);
    expect(at).toBeLessThanOrEqual(Date.now());
    expect(await row(used.credentialId).locator('[data-last-used]').innerText()).toContain(String(new Date(at).getFullYear()));
    expect(await lastUsed(unused.credentialId)).toBe('never');
    expect(await row(unused.credentialId).locator('[data-last-used]').innerText()).toBe('never');
    expect(await page.locator('[data-last-used-hint]').innerText()).toContain('once an hour');
    await screenshots(page, 'keys-last-used');
  });

  it('rolls a key: the overlap chosen, the new secret shown once, the old one working until then', async () => {
    await page.goto('/dashboard/keys');
    await row(used.credentialId).getByRole('button', { name: 'Roll the key api-key key' }).click();
    const form = page.locator('[data-roll-form]');
    await expect.poll(() => form.isVisible()).toBe(true);
    await expect.poll(async () => (await focused(page)).id).toBe('roll-heading');
    await form.getByLabel('The old secret keeps working for').selectOption({ label: '7 days' });
    await screenshots(page, 'keys-roll-form');
    await form.getByRole('button', { name: 'Roll the key' }).click();

    await expect.poll(() => page.locator('.secret strong').innerText().catch(() => '')).toBe('The new secret of “api-key key”');
    await expect.poll(async () => (await focused(page)).id).toBe('rolled');
    expect(await form.count()).toBe(0);
    const secret = await page.locator('[data-secret]').innerText();
    expect(secret).toMatch(/^rly_/);
    expect(secret).not.toBe(used.secret);
    const until = await row(used.credentialId).locator('[data-old-secret-until]').getAttribute('data-old-secret-until');
    expect(Math.abs(Date.parse(until!) - Date.now() - 7 * 86_400_000)).toBeLessThan(120_000);
    expect(await page.locator('[data-rolled]').innerText()).toContain('The old secret works until');
    expect(await row(used.credentialId).locator('code').innerText()).toBe(`${secret.slice(0, 8)}…`);
    for (const key of [used.secret, secret]) expect(await api(relay, 'GET', '/auth/verify', { key })).toMatchObject({ status: 200, body: { appIds: [appId] } });
    await screenshots(page, 'keys-rolled');

    // Shown once: read again, the page has no secret, and the row still says until when the old one works.
    await page.reload();
    await expect.poll(() => row(used.credentialId).locator('[data-old-secret-until]').count()).toBe(1);
    expect(await page.locator('[data-secret]').count()).toBe(0);
  });

  it('says why a roll failed (the key was deleted meanwhile), and Cancel closes the form', async () => {
    await page.goto('/dashboard/keys');
    await row(unused.credentialId).getByRole('button', { name: 'Roll the key hook key' }).click();
    await page.locator('[data-roll-form]').getByRole('button', { name: 'Cancel' }).click();
    expect(await page.locator('[data-roll-form]').count()).toBe(0);

    await row(unused.credentialId).getByRole('button', { name: 'Roll the key hook key' }).click();
    expect((await dashboard(relay, account, 'DELETE', `/credentials/${unused.credentialId}`)).status).toBe(200);
    await page.locator('[data-roll-form]').getByRole('button', { name: 'Roll the key' }).click();
    await expect.poll(() => page.locator('#roll-error').innerText().catch(() => '')).toContain('Credential not found');
    await expect.poll(async () => (await focused(page)).id).toBe('roll-error');
    expect(await page.locator('[data-secret]').count()).toBe(0);
    // The list is read again: the deleted key is gone from it.
    await expect.poll(() => row(unused.credentialId).count()).toBe(0);
    await screenshots(page, 'keys-roll-failed');
  });
});
