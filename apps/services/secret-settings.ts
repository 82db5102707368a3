/**
 * Settings that are, or may carry, a secret (issue 47): the secret key, the metrics token, and the
 * URLs that hold a password (a database, the mail server, the payment nodes' RPC). They are taken
 * from the environment, from `CONFIG_FILE`, or from a file of their own (`<NAME>_FILE`, as
 * container images pass secrets: `RELAY_SECRET_KEY_FILE=/run/secrets/relay_key`), never from the
 * command line, where any user of the machine reads them (`ps`, /proc/<pid>/cmdline).
 */
import fs from 'node:fs';

export const SECRET_SETTINGS = ['RELAY_SECRET_KEY', 'METRICS_TOKEN', 'DATABASE_URL', 'EVENTSTORE_URL', 'SMTP_URL', 'MONERO_WALLET_RPC_URL', 'BITCOIN_RPC_URL'] as const;
export type SecretSetting = (typeof SECRET_SETTINGS)[number];
export type SecretFileSetting = `${SecretSetting}_FILE`;
export const SECRET_FILE_SETTINGS = SECRET_SETTINGS.map((key) => `${key}_FILE` as SecretFileSetting);

const isSecret = (key: string): key is SecretSetting => (SECRET_SETTINGS as readonly string[]).includes(key);

/** What the CLI says of a secret given as a flag. */
export const refusedOnCommandLine = (key: SecretSetting): string =>
  `--${key.toLowerCase().replaceAll('_', '-')} is refused: a secret on the command line can be read by other users of this machine (ps). ` +
  `Set ${key} in the environment, or ${key}_FILE to a file that holds it`;

/**
 * The secrets' values from their files, for the keys that name one; a refusal in the words of a
 * configuration error (the caller adds `Invalid configuration `) when a flag carries a secret, when
 * a secret and its file are both set, or when the file cannot be read.
 */
export const secretsFromFiles = (
  env: Readonly<Record<string, string | undefined>>,
  flags: Readonly<Record<string, string | undefined>>,
  settingsFile: Readonly<Record<string, string>>,
): { ok: true; values: Partial<Record<SecretSetting, string>> } | { ok: false; refusal: string; flag?: true } => {
  for (const key of Object.keys(flags)) if (isSecret(key) && flags[key] !== undefined) return { ok: false, refusal: refusedOnCommandLine(key), flag: true };
  const values: Partial<Record<SecretSetting, string>> = {};
  for (const key of SECRET_SETTINGS) {
    const file = flags[`${key}_FILE`] ?? env[`${key}_FILE`];
    if (file === undefined || file === '') continue;
    const direct = env[key] ?? settingsFile[key];
    if (direct !== undefined && direct !== '') return { ok: false, refusal: `${key}_FILE: set ${key} or ${key}_FILE, not both` };
    try {
      values[key] = fs.readFileSync(file, 'utf8').trim();
    } catch {
      return { ok: false, refusal: `${key}_FILE=${JSON.stringify(file.slice(0, 200))}: cannot be read` };
    }
  }
  return { ok: true, values };
};
