/**
 * A started Relay (on a temporary data directory) and a browser for the dashboard's browser tests,
 * both closed after use: for a describe block (relayWithBrowser) or for one test (withRelayAndBrowser).
 */
import { afterAll, beforeAll } from 'vitest';
import type { Browser } from 'playwright-core';
import { launchBrowser } from './browser.ts';
import { startRelayProcess, type RelayProcess, type StartOptions } from './relay-process.ts';

const close = async (relay: RelayProcess | undefined, browser: Browser | undefined) => {
  await browser?.close();
  await relay?.stop();
  await relay?.cleanup();
};

/** A Relay and a browser for the tests of the describe block it is called in (read them in the tests, not before). */
export const relayWithBrowser = (options: StartOptions = {}): { relay: RelayProcess; browser: Browser } => {
  const suite = {} as { relay: RelayProcess; browser: Browser };
  beforeAll(async () => {
    suite.relay = await startRelayProcess(options);
    suite.browser = await launchBrowser();
  }, 120_000);
  afterAll(() => close(suite.relay, suite.browser));
  return suite;
};

/** Runs `test` with a Relay and a browser of its own, closed after it whatever happens. */
export const withRelayAndBrowser = async (options: StartOptions, test: (relay: RelayProcess, browser: Browser) => Promise<void>): Promise<void> => {
  const relay = await startRelayProcess(options);
  let browser: Browser | undefined;
  try {
    browser = await launchBrowser();
    await test(relay, browser);
  } finally {
    await close(relay, browser);
  }
};
