import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LATE_CHECKPOINT_PAGES } from './checkpoint-pages.ts';
import { openSqlite } from './open-sqlite.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
const file = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-open-sqlite-'));
  dirs.push(dir);
  return path.join(dir, 'x.db');
};
const schema = { schemaSql: 'CREATE TABLE IF NOT EXISTS t (x); PRAGMA user_version = 1;', schemaVersion: 1 };

describe('openSqlite', () => {
  it('sets the WAL checkpoint threshold: SQLite’s 1000 pages by default, later for connections that leave checkpoints to another', () => {
    const path = file();
    const normal = openSqlite({ path, ...schema });
    const late = openSqlite({ path, ...schema, autoCheckpointPages: LATE_CHECKPOINT_PAGES });
    try {
      expect(normal.pragma('wal_autocheckpoint', { simple: true })).toBe(1000n); // safe integers: bigint
      expect(late.pragma('wal_autocheckpoint', { simple: true })).toBe(4000n);
    } finally {
      normal.close();
      late.close();
    }
    expect(() => openSqlite({ path, ...schema, autoCheckpointPages: 0 })).toThrow(RangeError);
  });

  it('gives each connection SQLite’s 2 MB page cache, not better-sqlite3’s 16 MB', () => {
    const db = openSqlite({ path: file(), ...schema });
    try {
      expect(db.pragma('cache_size', { simple: true })).toBe(-2000n);
    } finally {
      db.close();
    }
  });
});
