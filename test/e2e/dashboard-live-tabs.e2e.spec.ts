/**
 * The live statistics page open in many tabs of one browser (issue 50): a browser opens at most
 * six connections to one host over HTTP/1.1, and each tab used to hold an event stream of its
 * own, so that a seventh dashboard tab did not load. The tabs share one stream now
 * (dashboard/src/live.ts): every tab loads and follows the figures, over one connection.
 */
import { describe, expect, it } from 'vitest';
import type { Page } from 'playwright-core';
import { browserSkipReason } from '../support/browser.ts';
import { screenshots, signedInContext } from '../support/dashboard-checks.ts';
import { withRelayAndBrowser } from '../support/dashboard-relay.ts';
import { api, createAccount, createApp, createKey } from '../support/account-fixture.ts';

const skip = browserSkipReason();
const TABS = 8;

describe.skipIf(skip !== '')('the live statistics in many tabs of one browser', () => {
  it(`share one event stream: ${TABS} tabs all load, and all follow the figures (11)`, async () => {
    await withRelayAndBrowser({}, async (relay, browser) => {
      const account = await createAccount(relay, 'tabs@example.com');
      const { appId } = await createApp(relay, account, ['signal'], 'Tabs bot');
      const key = (await createKey(relay, account, [appId])).secret;
      const context = await signedInContext(relay, browser, account);
      let streams = 0;
      context.on('request', (request) => void (request.url().includes('/dashboard/stats/live/events') && streams++));
      const accepted = (page: Page) => page.locator('[data-totals] [data-figure="accepted"]').innerText();
      const pages: Page[] = [];
      for (let i = 0; i < TABS; i++) {
        const page = await context.newPage();
        // The first tab waits for the statistics to have started (503 until then).
        await expect
          .poll(async () => {
            await page.goto('/dashboard/stats/live');
            return page.locator('[data-live-state]').count();
          }, { timeout: 20_000 })
          .toBe(1);
        await expect.poll(() => page.locator('[data-live-state]').innerText()).toMatch(/^Live: updated/);
        pages.push(page);
      }
      const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [1, 2, 3].map((i) => ({ appId, messenger: 'signal', contactId: '+15550003333', message: `m${i}` })) } });
      expect(sent.status).toBe(202);
      for (const page of pages) await expect.poll(() => accepted(page), { timeout: 10_000 }).toBe('3');
      expect(streams).toBe(1);
      await screenshots(pages.at(-1)!, 'statistics-live-tabs');

      // The tab holding the stream closes: another takes it over, and the figures still follow.
      await pages.shift()!.close();
      expect((await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550003333', message: 'm4' }] } })).status).toBe(202);
      for (const page of pages) await expect.poll(() => accepted(page), { timeout: 10_000 }).toBe('4');
      expect(streams).toBe(2);
    });
  });
});
