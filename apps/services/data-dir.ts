import fs from 'node:fs';
import path from 'node:path';

/**
 * DATA_DIR holds the stores (message bodies sealed, but the keys beside them), the read-model
 * snapshots (key hashes) and the secret key: only its owner may read it. It is created 0700 and
 * every file in it kept 0600, also in a directory an older version created 0755/0644.
 * `relay` sets its umask to 077, so that every file it creates later (SQLite's -wal and -shm
 * files, snapshots) is private too.
 */
export const prepareDataDir = (dir: string): void => {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  tighten(dir, 0o700);
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    if (entry.isFile()) tighten(path.join(dir, entry.name), 0o600);
  }
};

const tighten = (file: string, mode: number): void => {
  let current: number;
  try {
    current = fs.statSync(file).mode & 0o777;
  } catch {
    return; // removed meanwhile (a temporary file of another process)
  }
  if ((current & ~mode) === 0) return;
  try {
    fs.chmodSync(file, mode);
  } catch (error) {
    throw new Error(`${file} is readable by others (mode ${current.toString(8)}) and cannot be made private: ${(error as Error).message}`);
  }
};
