import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { openSqlite, type SqliteSynchronous } from './open-sqlite.ts';
import { unsyncedWrites } from './unsynced-writes.ts';

const dirs: string[] = [];
const opened: Database.Database[] = [];
afterEach(() => {
  for (const db of opened.splice(0)) db.close();
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});
const open = (synchronous: SqliteSynchronous) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-unsynced-'));
  dirs.push(dir);
  const file = path.join(dir, 'x.db');
  const db = openSqlite({ path: file, synchronous, schemaSql: 'CREATE TABLE IF NOT EXISTS t (x); PRAGMA user_version = 1;', schemaVersion: 1 });
  opened.push(db);
  return { db, file };
};
const level = (db: Database.Database) => Number(db.pragma('synchronous', { simple: true }));
const NORMAL = 1;
const FULL = 2;
const EXTRA = 3;

describe('unsyncedWrites', () => {
  it('commits a write at NORMAL on a FULL connection, then puts FULL back', () => {
    const { db, file } = open('full');
    const unsynced = unsyncedWrites(db, 'full');
    const seen = unsynced(() => {
      db.prepare('INSERT INTO t VALUES (1)').run();
      return level(db);
    });
    expect([seen, level(db)]).toEqual([NORMAL, FULL]);
    // Committed: another connection reads it.
    const other = new Database(file, { readonly: true });
    opened.push(other);
    expect(other.prepare('SELECT count(*) AS n FROM t').get()).toEqual({ n: 1 });
  });

  it('puts the level back when the write throws, and the error passes', () => {
    const { db } = open('extra');
    const unsynced = unsyncedWrites(db, 'extra');
    expect(() =>
      unsynced(() => {
        throw new RangeError('no');
      }),
    ).toThrow(RangeError);
    expect(level(db)).toBe(EXTRA);
  });

  it('leaves a connection that syncs nothing per commit as it is', () => {
    const { db } = open('off');
    const unsynced = unsyncedWrites(db, 'off');
    expect(unsynced(() => level(db))).toBe(0);
    expect(level(db)).toBe(0);
  });
});
