/**
 * A real browser for the dashboard's tests: Debian's Chromium (`chromium`, which .ci/run installs
 * with apt when it is missing) driven by playwright-core, nothing downloaded. CHROMIUM_PATH names
 * another binary. Without one the suites skip and say why, except under CI, where they must run.
 * Screenshots are kept as test artifacts in test-artifacts/dashboard/.
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './relay-process.ts';

const CANDIDATES = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter((p): p is string => Boolean(p));

export const chromiumPath = (): string | undefined => CANDIDATES.find((p) => fs.existsSync(p));

/** Why the browser suites skip here, or '' when they run. Under CI a missing browser fails instead. */
export const browserSkipReason = (): string => {
  if (chromiumPath()) return '';
  const missing = `no Chromium (looked at ${CANDIDATES.join(', ')}; apt-get install chromium, or set CHROMIUM_PATH)`;
  if (process.env.CI) throw new Error(`The dashboard's browser suites must run in CI: ${missing}`);
  return missing;
};

export const launchBrowser = (): Promise<Browser> =>
  chromium.launch({ executablePath: chromiumPath()!, args: ['--no-sandbox', '--disable-dev-shm-usage'] });

export const ARTIFACTS = path.join(ROOT, 'test-artifacts/dashboard');

export const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } } as const;

/** A screenshot of the page at desktop and at phone width: test-artifacts/dashboard/<name>-desktop.png and -phone.png. */
export const screenshots = async (page: Page, name: string): Promise<void> => {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const before = page.viewportSize();
  for (const [width, size] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(size);
    await page.screenshot({ path: path.join(ARTIFACTS, `${name}-${width}.png`), fullPage: true });
  }
  if (before) await page.setViewportSize(before);
};
