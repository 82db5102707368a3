import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The key that encrypts secrets at rest: the configured one, else the one generated into DATA_DIR
 * earlier (mode 0600), so a restart decrypts what an earlier run stored; undefined when there is
 * neither (apps/boot/secret-key-check.ts decides whether one is generated).
 */
export const existingSecretKey = (configured: string | undefined, dataDir: string): string | undefined => {
  if (configured) return configured.toLowerCase();
  try {
    return fs.readFileSync(secretKeyFile(dataDir), 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    return undefined;
  }
};

/** Where a generated key is kept. */
export const secretKeyFile = (dataDir: string): string => path.join(dataDir, 'secret.key');

/** Generates a key into DATA_DIR (mode 0600); another process that made one first wins. */
export const generateSecretKeyFile = (dataDir: string): string => {
  const file = secretKeyFile(dataDir);
  const key = randomBytes(32).toString('hex');
  fs.mkdirSync(dataDir, { recursive: true });
  try {
    fs.writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
    return key;
  } catch (error) {
    // Another process (a CLI beside the server) created it first: use theirs.
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return fs.readFileSync(file, 'utf8').trim();
    throw error;
  }
};
