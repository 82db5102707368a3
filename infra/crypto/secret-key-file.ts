import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/**
 * The key that encrypts secrets at rest: the configured one, else the one generated into
 * DATA_DIR on first start (mode 0600), so a restart decrypts what an earlier run stored.
 */
export const resolveSecretKey = (configured: string | undefined, dataDir: string): string => {
  if (configured) return configured.toLowerCase();
  const file = path.join(dataDir, 'secret.key');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
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
