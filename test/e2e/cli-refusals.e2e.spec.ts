/**
 * The `relay` commands a new user trips over say at once what is wrong, in words that tell what to
 * do: a simulated contact the messenger would never send from, `relay signal link|bind` without
 * the daemon's URL in the command's own environment, and a daemon that cannot reach Signal.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, dashboard } from '../support/account-fixture.ts';
import { FakeSignalCli } from '../support/fake-signal-cli.ts';
import { runCli, startRelayProcess } from '../support/relay-process.ts';

describe('relay simulate inbound', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-cli-'));
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  const inbound = (messenger: string, contact: string) =>
    runCli(['simulate', 'inbound', '--app', 'app_unknown', '--messenger', messenger, '--contact', contact, '--text', 'hi'], { DATA_DIR: dataDir, LOG_LEVEL: 'warn' });

  it('refuses at once a contact id the messenger would never send from (a reply to it would fail)', async () => {
    for (const [messenger, contact, expected] of [
      ['simplex', 'alice', 'Invalid contactId for simplex: expected a numeric user id'],
      ['signal', '15550001', 'Invalid contactId for signal: expected an E.164 phone number or a registered username'],
      ['session', '05abc', 'Invalid contactId for session: expected a 66-character hex Session ID starting with 05'],
    ] as const) {
      const result = await inbound(messenger, contact);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toContain(expected);
      expect(result.stderr).toContain(`--contact "${contact}"`);
    }
  });

  it('lets a contact id in the messenger’s format through to the app check', async () => {
    for (const [messenger, contact] of [
      ['simplex', '4242'],
      ['simplex', 'member-7'],
      ['signal', '+15550001'],
    ] as const) {
      const result = await inbound(messenger, contact);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`App app_unknown has no ${messenger} messenger`);
    }
  });
});

describe('relay signal link', () => {
  it('says that SIGNAL_CLI_URL must be in its own environment when it is not', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-cli-'));
    try {
      for (const command of ['link', 'bind']) {
        const args = command === 'link' ? ['signal', 'link', '--app-messenger', 'am_x'] : ['signal', 'bind', '--app-messenger', 'am_x', '--account', '+15550001'];
        const result = await runCli(args, { DATA_DIR: dataDir, LOG_LEVEL: 'warn', SIGNAL_CLI_URL: '' });
        expect(result.code).toBe(1);
        expect(result.stderr).toContain(`relay signal ${command} needs SIGNAL_CLI_URL in its own environment`);
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('says what "Link request error: Connection closed!" means: the daemon could not reach Signal', async () => {
    const fake = await new FakeSignalCli().start();
    // The running Relay asks the daemon nothing while the command runs (so the command gets the error).
    const relay = await startRelayProcess({ env: { SIGNAL_CLI_URL: fake.httpUrl, MESSENGER_HEALTH_INTERVAL_MS: '3600000', SIGNAL_CLI_ACCOUNT_WATCH_MS: '3600000' } });
    try {
      const account = await createAccount(relay);
      const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Linked bot', protocol: ['signal'] });
      expect(created.status).toBe(200);
      const appMessengerId = created.body.messengers[0].id as string;
      await relay.stop();
      // As signal-cli 0.13 answers startLink when its connection to Signal's servers fails.
      fake.failNextCall(-3, 'Link request error: Connection closed!');
      const result = await relay.cli(['signal', 'link', '--app-messenger', appMessengerId, '--timeout', '5']);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain("signal-cli's daemon could not reach Signal's servers");
      expect(result.stderr).toContain('Link request error: Connection closed!');
      expect(result.stdout).not.toContain('sgnl://');
    } finally {
      await relay.stop();
      await relay.cleanup();
      await fake.close();
    }
  });
});
