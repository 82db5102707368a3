/**
 * The statistics pages in a real browser, against the numbers the test's traffic caused (issue 50
 * §2, "charts that tell the truth"): the totals; charts whose captions say what they show, drawn
 * on one scale (9 accepted stand nine times as tall as 1 failed), with a value axis, a time axis,
 * and each bar titled with its time and exact count; the figures as a table; the day's charts
 * per hour; and the live page, whose charts (of all apps, and of each app) change as messages are
 * sent, without reloading. Each page checked with axe-core and at phone width (dashboard-checks.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { browserSkipReason } from '../support/browser.ts';
import { screenshots, signedInContext } from '../support/dashboard-checks.ts';
import { withRelayAndBrowser } from '../support/dashboard-relay.ts';
import { api, createAccount, createApp, createKey } from '../support/account-fixture.ts';

const skip = browserSkipReason();

/** "12:04", UTC, of an instant; and the minute after it. */
const clock = (ms: number) => new Date(ms).toISOString().slice(11, 16);
const minuteOf = (ms: number) => `${clock(ms)}–${clock(Math.floor(ms / 60_000) * 60_000 + 60_000)} UTC`;

/** The bars of one chart of the page: [count, drawn height in px] each. */
const bars = (page: Page, figure: string, within = 'main') =>
  page.locator(within).first().locator(`[data-chart="${figure}"] rect`).evaluateAll((rects) => rects.map((r) => [Number(r.getAttribute('data-value')), Number(r.getAttribute('height'))] as const));
const caption = (page: Page, figure: string, within = 'main') => page.locator(within).first().locator(`[data-chart="${figure}"] figcaption`).first().innerText();
const totalOf = async (page: Page, figure: string, within = 'main') => (await bars(page, figure, within)).reduce((sum, [v]) => sum + v, 0);

describe.skipIf(skip !== '')('the statistics pages in a browser', () => {
  it('show the numbers the traffic caused, on charts with one scale, axes, exact titles and captions, per app, and follow new traffic live', async () => {
    // The failing message's retry an hour away, so that it stays waiting however slowly the pages load
    // (by default its third attempt, ~5 s on, would abandon it: waiting 0).
    await withRelayAndBrowser({ env: { DELIVERY_BACKOFF_BASE_MS: '3600000' } }, async (relay, browser) => {
      const account = await createAccount(relay, 'stats@example.com');
      const { appId } = await createApp(relay, account, ['signal'], 'Stats bot');
      const other = (await createApp(relay, account, ['signal'], 'Echo bot')).appId;
      const key = (await createKey(relay, account, [appId, other])).secret;
      // A contact whose deliveries keep failing (transient: its message waits to be retried).
      expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550007777', '--times', '-1'])).code).toBe(0);
      const send = async (app: string, contacts: string[]) => {
        const res = await api(relay, 'POST', '/messages/send', { key, body: { messages: contacts.map((contactId, i) => ({ appId: app, messenger: 'signal', contactId, message: `m${i}` })) } });
        expect(res.status).toBe(202);
      };
      // One send, so that its 9 messages are accepted in one minute: 8 delivered, 1 failed.
      const before = Date.now();
      await send(appId, [...Array<string>(8).fill('+15550006666'), '+15550007777']);
      const after = Date.now();
      const context = await signedInContext(relay, browser, account);
      const page = await context.newPage();
      const figures = async () =>
        Object.fromEntries(
          await Promise.all(['accepted', 'delivered', 'failed', 'waiting'].map(async (f) => [f, Number(await page.locator(`[data-totals] [data-figure="${f}"]`).first().innerText())])),
        );
      await expect
        .poll(async () => {
          await page.goto('/dashboard/stats');
          return figures();
        }, { timeout: 20_000 })
        .toEqual({ accepted: 9, delivered: 8, failed: 1, waiting: 1 });
      expect(await page.locator('[data-apps]').innerText()).toContain('Stats bot');

      // Captions say what a chart shows, with the window's total (not "per minute: 9").
      expect(await caption(page, 'accepted')).toBe('Accepted in the last hour, per minute: 9 in all');
      expect(await caption(page, 'failed')).toBe('Failed in the last hour, per minute: 1 in all');
      expect(await page.getByRole('img', { name: /^Accepted in the last hour, per minute: 9 in all; the most in one minute: 9, at / }).count()).toBe(1);
      // One scale: the bar of 9 accepted is nine times as tall as the bar of 1 failed.
      const [accepted] = await bars(page, 'accepted');
      const [failed] = await bars(page, 'failed');
      expect([accepted?.[0], failed?.[0]]).toEqual([9, 1]);
      expect(accepted![1] / failed![1]).toBeCloseTo(9, 6);
      // Every bar of the page is drawn at the same height per message.
      const perMessage = new Set((await page.locator('[data-chart] rect').evaluateAll((rects) => rects.map((r) => Number(r.getAttribute('height')) / Number(r.getAttribute('data-value'))))).map((h) => h.toFixed(4)));
      expect(perMessage.size).toBe(1);
      // A value axis with labelled ticks (0 to 10 in steps of 2 hold 9), the same on each chart.
      expect(await page.locator('[data-chart="failed"] [data-tick]').allTextContents()).toEqual(['0', '2', '4', '6', '8', '10']);
      expect(await page.locator('[data-chart="accepted"] [data-tick]').allTextContents()).toEqual(['0', '2', '4', '6', '8', '10']);
      // A time axis labelled every 10 minutes (UTC) across the hour.
      const times = await page.locator('[data-chart="accepted"] [data-time]').allTextContents();
      expect(times.length).toBeGreaterThanOrEqual(6);
      times.forEach((t, i) => {
        expect(t).toMatch(/^\d\d:\d0$/);
        if (i > 0) expect((Date.parse(`1970-01-01T${t}Z`) - Date.parse(`1970-01-01T${times[i - 1]}Z`) + 86_400_000) % 86_400_000).toBe(600_000);
      });
      // Each bar's title carries its exact count and its minute.
      const title = (await page.locator('[data-chart="accepted"] rect title').textContent()) ?? '';
      expect([`${minuteOf(before)}: 9 accepted`, `${minuteOf(after)}: 9 accepted`]).toContain(title);
      // The figures as a table, for the keyboard and screen readers; and what Failed and Abandoned count.
      await page.locator('details.figures summary').first().click();
      const row = page.locator('[data-figures] tbody tr').filter({ has: page.locator('th', { hasText: title.replace(/: 9 accepted$/, '') }) });
      expect(await row.locator('td[data-label="Accepted"]').innerText()).toBe('9');
      expect(await page.locator('.figures-explained').innerText()).toContain('So Failed and Abandoned are not to be added up.');
      await screenshots(page, 'statistics');

      await page.goto('/dashboard/stats?window=day');
      expect(await figures()).toEqual({ accepted: 9, delivered: 8, failed: 1, waiting: 1 });
      expect(await caption(page, 'accepted')).toBe('Accepted in the last 24 hours, per hour: 9 in all');
      expect((await bars(page, 'accepted')).map(([v]) => v)).toEqual([9]);
      expect(await page.locator('[data-chart="accepted"] [data-time]').allTextContents()).toEqual(expect.arrayContaining([expect.stringMatching(/^(00|04|08|12|16|20):00$/)]));
      await screenshots(page, 'statistics-day');
      await page.goto(`/dashboard/stats/apps/${appId}`);
      expect(await figures()).toEqual({ accepted: 9, delivered: 8, failed: 1, waiting: 1 });
      expect(await caption(page, 'accepted')).toBe('Accepted in the last hour, per minute: 9 in all');
      await page.goto('/dashboard/stats/apps/app_000000000000000000000000');
      expect(await page.getByRole('heading', { name: 'App not found' }).isVisible()).toBe(true);

      // Live: the charts move while the bots send, without reloading; with two apps at work, each has its own.
      await page.goto('/dashboard/stats/live');
      await expect.poll(() => page.locator('[data-live-state]').innerText()).toMatch(/^Live: updated/);
      expect(await caption(page, 'accepted', '[data-live-charts]')).toBe('Accepted in the last hour, per minute: 9 in all');
      expect(await page.locator('.app-charts').count()).toBe(0);
      await send(other, ['+15550006666', '+15550006666', '+15550006666']);
      await expect.poll(() => caption(page, 'accepted', '[data-live-charts]'), { timeout: 10_000 }).toBe('Accepted in the last hour, per minute: 12 in all');
      expect(await totalOf(page, 'accepted', '[data-live-charts] > .chart-group')).toBe(12);
      await expect.poll(async () => (await figures()).delivered, { timeout: 10_000 }).toBe(11);
      const echo = page.locator('.app-charts', { has: page.getByRole('heading', { name: 'Echo bot' }) });
      await expect.poll(() => echo.locator('[data-chart="accepted"] figcaption').innerText().catch(() => '')).toBe('Accepted in the last hour, per minute: 3 in all');
      expect(await page.locator('.app-charts h3').allInnerTexts()).toEqual(['Stats bot', 'Echo bot']);
      await screenshots(page, 'statistics-live');

      // One app's live page draws that app's charts.
      await page.goto(`/dashboard/stats/live?app=${other}`);
      await expect.poll(() => page.locator('[data-live-state]').innerText()).toMatch(/^Live: updated/);
      expect(await caption(page, 'accepted', '[data-live-charts]')).toBe('Accepted in the last hour, per minute: 3 in all');
      // A redraw keeps the figures' table open, and the focus on it, where the reader put them.
      await page.locator('[data-live-charts] details.figures summary').focus();
      await page.keyboard.press('Enter');
      await send(other, ['+15550006666']);
      await expect.poll(() => caption(page, 'accepted', '[data-live-charts]'), { timeout: 10_000 }).toBe('Accepted in the last hour, per minute: 4 in all');
      const cells = await page.locator('[data-live-charts] details.figures[open] td[data-label="Accepted"]').allInnerTexts();
      expect(cells.reduce((sum, cell) => sum + Number(cell), 0)).toBe(4);
      expect(await page.evaluate('document.activeElement?.tagName')).toBe('SUMMARY');

      // Without a script, the hour and day pages (and the live page's first paint) still draw their charts.
      const scriptless = await browser.newContext({ baseURL: relay.url, javaScriptEnabled: false });
      await scriptless.addCookies([{ name: 'relay_session', value: account.session, url: relay.url }]);
      const plain = await scriptless.newPage();
      for (const path of ['/dashboard/stats?window=day', '/dashboard/stats/live']) {
        await plain.goto(path);
        expect(await caption(plain, 'accepted')).toMatch(/^Accepted in the last (24 hours, per hour|hour, per minute): 13 in all$/);
      }
      await scriptless.close();

      // Signed out, the pages send the browser to sign in.
      const anonymous = await fetch(`${relay.url}/dashboard/stats`, { redirect: 'manual' });
      expect({ status: anonymous.status, location: anonymous.headers.get('location') }).toEqual({ status: 303, location: '/dashboard' });
      // The interface's 404 for statistics under the account API's prefix still holds.
      expect((await fetch(`${relay.url}/dashboard/api/dashboard/stats`, { headers: { cookie: account.cookie } })).status).toBe(404);
    });
  });
});
