import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createGroupCommit, isBusy } from './group-commit.ts';

/** The group commit on a real SQLite file, with a second connection to hold the write lock. */
describe('group commit', () => {
  let dir: string;
  let file: string;
  let db: Database.Database;
  let other: Database.Database;
  const committed: number[] = [];
  const open = (busyTimeoutMs: number) => {
    db = new Database(file);
    db.pragma('journal_mode = WAL');
    db.pragma(`busy_timeout = ${busyTimeoutMs}`);
    db.exec('CREATE TABLE IF NOT EXISTS t (v INTEGER UNIQUE)');
    const insert = db.prepare('INSERT INTO t (v) VALUES (?)');
    const groupCommit = createGroupCommit(db, {
      mapError: (error) => new Error('mapped', { cause: error }),
      onCommitted: () => committed.push(count()),
    });
    const add = (v: number) => groupCommit.enqueue(() => insert.run(v).changes);
    return { groupCommit, add };
  };
  const count = () => Number(db.prepare('SELECT count(*) FROM t').pluck().get());

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-group-commit-'));
    file = path.join(dir, 'g.db');
    committed.length = 0;
  });
  afterEach(() => {
    if (other?.open) other.close();
    if (db?.open) db.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('commits the writes of one turn together; a failing write fails alone', async () => {
    const { add } = open(1000);
    const results = await Promise.allSettled([add(1), add(2), add(1), add(3)]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
    expect((results[2] as PromiseRejectedResult).reason).toMatchObject({ message: 'mapped', cause: { code: 'SQLITE_CONSTRAINT_UNIQUE' } });
    expect(committed).toEqual([3]);
  });

  it("keeps the connection's own busy timeout for everything else", async () => {
    const { add } = open(1234);
    await add(1);
    expect(Number(db.pragma('busy_timeout', { simple: true }))).toBe(1234);
  });

  it('retries while another connection holds the lock, without stopping the thread, and gathers what is queued meanwhile', async () => {
    const { add } = open(5000);
    await add(0);
    other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 2);
    setTimeout(() => other.exec('COMMIT'), 60);
    const first = add(1);
    await new Promise((resolve) => setTimeout(resolve, 20));
    const second = add(2);
    await expect(Promise.all([first, second])).resolves.toEqual([1, 1]);
    clearInterval(ticker);
    expect(ticks).toBeGreaterThanOrEqual(10);
    expect(committed).toEqual([1, 3]);
  });

  it('fails the queued writes with a busy error once the lock stayed taken for busyTimeoutMs, then works again', async () => {
    const { add } = open(50);
    other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    const started = Date.now();
    const failure = (await add(1).catch((error: unknown) => error)) as Error;
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);
    expect(failure.message).toBe('mapped');
    expect(isBusy(failure.cause)).toBe(true);
    other.exec('ROLLBACK');
    await expect(add(1)).resolves.toBe(1);
    expect(count()).toBe(1);
  });

  it('after close, rejects what is queued and what comes', async () => {
    const { groupCommit, add } = open(1000);
    const queued = add(1);
    groupCommit.close(new Error('closed'));
    await expect(queued).rejects.toThrow('closed');
    await expect(add(2)).rejects.toThrow('closed');
    expect(count()).toBe(0);
  });
  it('tries again on the next turn when told another connection committed, not at its next millisecond', async () => {
    const { groupCommit, add } = open(5000);
    await add(0);
    other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    // The millisecond retries never come: only lockReleased can commit the write.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const turns = async (n: number) => {
        for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
      };
      let done = false;
      const write = add(1).then((changes) => ((done = true), changes));
      await turns(5); // the first try and the retry on the next turn failed; a retry waits a millisecond
      expect(done).toBe(false);
      groupCommit.lockReleased(); // the lock is still taken: tried again, fails, waits again
      await turns(5);
      expect(done).toBe(false);
      other.exec('COMMIT');
      groupCommit.lockReleased();
      await turns(2);
      expect(done).toBe(true);
      await expect(write).resolves.toBe(1);
      expect(committed).toEqual([1, 2]);
      groupCommit.lockReleased(); // nothing waiting: nothing happens
      await turns(2);
      expect(committed).toEqual([1, 2]);
    } finally {
      vi.useRealTimers();
    }
  });
});
