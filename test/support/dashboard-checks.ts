/**
 * What every dashboard page is held to in the browser tests, beside its screenshots at desktop and
 * phone width (browser.ts): no accessibility violation axe-core finds, and no horizontal overflow
 * of the page (a long word wraps; at a phone's width each row of a table is a card), at both
 * widths. axe-core is a dev dependency of the tests (`npm install -D axe-core`).
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import { expect } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { screenshots as screenshotsOnly, VIEWPORTS } from './browser.ts';
import type { RelayProcess } from './relay-process.ts';
import type { Account } from './account-fixture.ts';

type Violation = { id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> };

let axeSource: string | undefined;
const axe = (): string => {
  if (axeSource !== undefined) return axeSource;
  let file: string;
  try {
    file = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
  } catch {
    throw new Error('axe-core is missing: the dashboard tests check every page with it (npm install -D axe-core)');
  }
  return (axeSource = fs.readFileSync(file, 'utf8'));
};

/** axe-core's violations on the page as it is now, in a line each (rule, impact, the elements). */
export const axeViolations = async (page: Page): Promise<string[]> => {
  // Evaluated through the DevTools protocol: the pages' Content-Security-Policy (this origin's
  // scripts only) does not apply to it.
  if (!(await page.evaluate('typeof window.axe === "object"'))) await page.evaluate(axe());
  const violations = (await page.evaluate('window.axe.run(document).then((r) => r.violations)')) as Violation[];
  return violations.map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`);
};

/** How far the page is wider than the window (0 when nothing sticks out sideways). */
export const horizontalOverflow = (page: Page): Promise<number> =>
  page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth') as Promise<number>;

/** The screenshots of the page at desktop and phone width, after checking it at both: no axe violation, no horizontal overflow. */
export const screenshots = async (page: Page, name: string): Promise<void> => {
  const before = page.viewportSize();
  for (const [width, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    expect.soft(await axeViolations(page), `axe on ${name} at ${width} width`).toEqual([]);
    expect.soft(await horizontalOverflow(page), `horizontal overflow of ${name} at ${width} width`).toBe(0);
  }
  if (before) await page.setViewportSize(before);
  await screenshotsOnly(page, name);
};

/** A browser context signed in as the account (its session cookie), desktop-sized. */
export const signedInContext = async (relay: RelayProcess, browser: Browser, account: Account): Promise<BrowserContext> => {
  const context = await browser.newContext({ baseURL: relay.url, viewport: VIEWPORTS.desktop });
  context.setDefaultTimeout(15_000);
  await context.addCookies([{ name: 'relay_session', value: account.session, url: relay.url }]);
  return context;
};

/** The focused element: its id, what describes it (aria-describedby) and its text. */
export const focused = (page: Page): Promise<{ id: string; describedBy: string | null; text: string }> =>
  page.evaluate('({ id: document.activeElement?.id ?? "", describedBy: document.activeElement?.getAttribute("aria-describedby") ?? null, text: document.activeElement?.textContent ?? "" })') as Promise<{
    id: string;
    describedBy: string | null;
    text: string;
  }>;
