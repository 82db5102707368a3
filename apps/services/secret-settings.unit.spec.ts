import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from './config.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-secrets-'));
const file = (name: string, content: string) => {
  const at = path.join(dir, name);
  fs.writeFileSync(at, content);
  return at;
};
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('secret settings (issue 47: never from the command line)', () => {
  const key = 'ab'.repeat(32);

  it('reads a secret from the file its *_FILE names, as container images pass them (a final newline is dropped)', () => {
    expect(loadConfig({ RELAY_SECRET_KEY_FILE: file('key', `${key}\n`) }).RELAY_SECRET_KEY).toBe(key);
    const config = loadConfig({ EVENT_STORE: 'postgres', DATABASE_URL_FILE: file('db', 'postgres://relay:hunter2@db.example/relay\n') });
    expect(config.DATABASE_URL).toBe('postgres://relay:hunter2@db.example/relay');
    expect(loadConfig({ SMTP_URL_FILE: file('smtp', 'smtps://me:pw@mail.example:465') }).SMTP_URL).toBe('smtps://me:pw@mail.example:465');
    // The file's name may come as a flag: it is no secret.
    expect(loadConfig({}, { METRICS_TOKEN_FILE: file('metrics', 'a-metrics-token-of-32-characters') }).METRICS_TOKEN).toBe('a-metrics-token-of-32-characters');
  });

  it('refuses a secret and its file both, and a file it cannot read, naming the setting only', () => {
    expect(() => loadConfig({ RELAY_SECRET_KEY: key, RELAY_SECRET_KEY_FILE: file('both', key) })).toThrow(
      new ConfigError('Invalid configuration RELAY_SECRET_KEY_FILE: set RELAY_SECRET_KEY or RELAY_SECRET_KEY_FILE, not both'),
    );
    const missing = path.join(dir, 'missing');
    expect(() => loadConfig({ RELAY_SECRET_KEY_FILE: missing })).toThrow(new ConfigError(`Invalid configuration RELAY_SECRET_KEY_FILE=${JSON.stringify(missing)}: cannot be read`));
    // A bad value read from a file is withheld like one from the environment.
    expect(() => loadConfig({ RELAY_SECRET_KEY_FILE: file('short', 'abc') })).toThrow('Invalid configuration RELAY_SECRET_KEY=(withheld, 3 characters)');
  });

  it('refuses a secret given as a flag, without showing it', () => {
    let thrown: unknown;
    try {
      loadConfig({}, { DATABASE_URL: 'postgres://relay:hunter2@db.example/relay' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toBe(
      '--database-url is refused: a secret on the command line can be read by other users of this machine (ps). Set DATABASE_URL in the environment, or DATABASE_URL_FILE to a file that holds it',
    );
    // Settings that are no secret still come as flags.
    expect(loadConfig({}, { PORT: '9090' }).PORT).toBe(9090);
  });
});
