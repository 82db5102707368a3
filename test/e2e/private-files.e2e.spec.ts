import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey } from '../support/account-fixture.ts';
import { runCli, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

/** What Relay leaves on disk and prints at start is its operator's only: no world-readable store, no secret in an error. */
const started: RelayProcess[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const relay of started) {
    await relay.stop();
    await relay.cleanup();
  }
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
});

const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-files-'));
  dirs.push(dir);
  return dir;
};
const modeOf = (file: string) => (fs.statSync(file).mode & 0o777).toString(8);

describe('DATA_DIR', () => {
  it('is 0700 and every file in it 0600 after a workload, also where an older version left 0755 and 0644', async () => {
    const dataDir = tempDir();
    fs.chmodSync(dataDir, 0o755);
    fs.writeFileSync(path.join(dataDir, 'read-models.sqlite.json'), '{}', { mode: 0o644 });
    const relay = await startRelayProcess({ dataDir });
    started.push(relay);
    const account = await createAccount(relay);
    const appId = (await createApp(relay, account, ['signal'])).appId;
    const { secret } = await createKey(relay, account, [appId]);
    expect((await api(relay, 'POST', '/messages/send', { key: secret, body: { messages: [{ appId, contactId: '+15550001', messenger: 'signal', message: 'hi' }] } })).status).toBe(202);
    expect((await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'signal', '--contact', '+15550002', '--text', 'yo'])).code).toBe(0);
    expect((await api(relay, 'GET', '/messages/poll', { key: secret })).status).toBe(200);
    expect(await relay.stop()).toBe(0);
    expect(modeOf(dataDir)).toBe('700');
    const files = fs.readdirSync(dataDir);
    expect(files).toEqual(expect.arrayContaining(['events.db', 'broker.db', 'secret.key', 'read-models.sqlite.json']));
    for (const file of files) expect(`${file} ${modeOf(path.join(dataDir, file))}`).toBe(`${file} 600`);
  });
});

describe('start-up errors', () => {
  it('name a bad secret without printing it', async () => {
    const secret = 'ab'.repeat(31) + 'a'; // 63 hex characters
    const result = await runCli(['start'], { DATA_DIR: tempDir(), RELAY_SECRET_KEY: secret });
    expect(result.code).toBe(2);
    expect(result.stderr).toBe('relay: Invalid configuration RELAY_SECRET_KEY=(withheld, 63 characters): must be 64 hex characters (32 bytes)\n');
  });

  it('mask the password of a bad store URL', async () => {
    const result = await runCli(['start'], { DATA_DIR: tempDir(), EVENT_STORE: 'postgres', DATABASE_URL: 'postgres://bob:hunter2secret@[db' });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('Invalid configuration DATABASE_URL="postgres://***@[db"');
    expect(result.stderr).not.toContain('hunter2secret');
  });
});
