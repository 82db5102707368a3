/**
 * examples/echo-bot against a real Relay: the bot polls, and every message a contact writes comes
 * back to them as its echo, in a group too. Its API types are what openapi-typescript makes of the
 * document this Relay serves (the committed file is checked against a fresh generation).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import openapiTS, { astToString } from 'openapi-typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createApp, createKey, waitFor } from '../support/account-fixture.ts';
import { ROOT, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const BOT_DIR = path.join(ROOT, 'examples/echo-bot');

describe('examples/echo-bot', () => {
  let relay: RelayProcess;
  let bot: ChildProcess | undefined;
  let botOutput = '';
  let appId: string;

  beforeAll(async () => {
    relay = await startRelayProcess();
    const account = await createAccount(relay);
    appId = (await createApp(relay, account, ['signal', 'simplex'])).appId;
    const { secret } = await createKey(relay, account, [appId]);
    bot = spawn(process.execPath, ['--import', 'tsx', path.join(BOT_DIR, 'echo-bot.ts')], {
      cwd: ROOT,
      env: { ...process.env, RELAY_URL: relay.url, RELAY_API_KEY: secret, ECHO_IDLE_MS: '100' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    bot.stdout!.on('data', (chunk: Buffer) => (botOutput += chunk.toString()));
    bot.stderr!.on('data', (chunk: Buffer) => (botOutput += chunk.toString()));
  });
  afterAll(async () => {
    if (bot && bot.exitCode === null) {
      const exited = new Promise((resolve) => bot!.once('exit', resolve));
      bot.kill('SIGTERM');
      await exited;
    }
    await relay?.stop();
    await relay?.cleanup();
  });

  const outbox = async () =>
    (await relay.cli(['simulate', 'outbox'])).stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { contactId: string; text: string; groupId: string | null; messenger: string; ok: boolean });

  it('answers what contacts write with its echo, on their messenger, in their group', async () => {
    for (const [messenger, contact, text, group] of [
      ['signal', '+15550100001', 'hello bot', undefined],
      ['simplex', '4242', 'in the team', '77'],
    ] as const) {
      const injected = await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', messenger, '--contact', contact, '--text', text, ...(group ? ['--group', group] : [])]);
      expect(injected.code, injected.stderr).toBe(0);
    }
    const echoes = await waitFor(async () => {
      const sent = await outbox();
      return sent.length >= 2 ? sent : undefined;
    }, 15_000, `the echoes (bot output: ${botOutput})`);
    expect(echoes.map((d) => [d.messenger, d.contactId, d.groupId, d.text, d.ok]).sort()).toEqual([
      ['signal', '+15550100001', null, 'echo: hello bot', true],
      ['simplex', '4242', '77', 'echo: in the team', true],
    ]);
  });

  it('is typed from the OpenAPI document this Relay serves', async () => {
    const document = (await (await fetch(`${relay.url}/docs/json`)).json()) as Parameters<typeof openapiTS>[0];
    const generated = astToString(await openapiTS(document));
    const committed = fs.readFileSync(path.join(BOT_DIR, 'relay-api.d.ts'), 'utf8');
    // The committed file carries the generator's header; the rest is the same.
    expect(committed.slice(committed.indexOf('export interface paths'))).toBe(generated.slice(generated.indexOf('export interface paths')));
  });
});
