/**
 * Issue 50's figure: the time from `relay start` to a first delivered message, done only in the
 * browser, as a new operator would: follow the one-time sign-in link `relay start` prints, sign
 * in, create an app, send a test message from its page, and watch the message log until it says
 * delivered. Chromium driven by playwright-core, every step through the page's own labels; the
 * clock runs from the spawn of `relay start` (fresh DATA_DIR, the build) to the log's `delivered`.
 * It prints each step's time and the number of page actions (clicks, fields filled). A person adds
 * reading and typing time to each action; the machine's figure is the floor.
 *
 *   node --import tsx scripts/first-message.ts      (after `node scripts/build.mjs`)
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { chromiumPath } from '../test/support/browser.ts';
import { freePort, ROOT } from '../test/support/relay-process.ts';

const main = async () => {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error('Chromium is needed (apt-get install chromium)');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-first-message-'));
  const port = await freePort();
  const started = performance.now();
  const steps: [string, number][] = [];
  const step = (name: string) => steps.push([name, performance.now() - started]);
  let actions = 0;
  const relay = spawn(process.execPath, ['bin/relay.js', 'start'], {
    cwd: ROOT,
    env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), OPERATOR_EMAIL: 'me@example.com', RELAY_FROM_BUILD: '1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const browser = await chromium.launch({ executablePath });
  try {
    let output = '';
    const link = await new Promise<string>((resolve, reject) => {
      relay.stdout!.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        const found = /https?:\/\/\S+\/dashboard\/auth\/email\/\S+/.exec(output);
        if (found) resolve(found[0].replace(/^https?:\/\/[^/]+/, `http://localhost:${port}`));
      });
      relay.once('exit', (code) => reject(new Error(`relay start ended (${code}) before printing a sign-in link:\n${output}`)));
    });
    step('sign-in link printed');
    const page = await browser.newPage();
    await page.goto(link);
    await page.getByRole('button', { name: 'Sign in' }).click();
    actions += 1;
    await page.getByRole('heading', { name: 'Apps' }).waitFor();
    step('signed in');
    await page.getByLabel('Name', { exact: true }).fill('My first bot');
    await page.getByRole('button', { name: 'Create app' }).click();
    actions += 2;
    await page.getByRole('heading', { name: 'My first bot' }).waitFor();
    step('app created');
    const form = page.locator('[data-test-message]');
    await form.getByLabel('Contact id').fill('+15550001234');
    await form.getByLabel('Message').fill('hello from the page');
    await form.getByRole('button', { name: 'Send the test message' }).click();
    actions += 3;
    const log = page.locator('[data-message-log]');
    await log.locator('td[data-status-text]', { hasText: 'delivered' }).first().waitFor({ timeout: 60_000 });
    step('delivered, in the message log');
    for (const [name, ms] of steps) console.info(`${(ms / 1000).toFixed(2).padStart(6)} s  ${name}`);
    console.info(`${actions} page actions (clicks and fields) after following the printed link`);
  } finally {
    await browser.close();
    relay.kill('SIGTERM');
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
};

await main();
