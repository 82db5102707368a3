import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eventStoreContract } from '../../../test/contracts/event-store.contract.ts';
import { EventStoreUnavailableError, ExpectedVersionConflictError, type EventStore, type NewDataKey, type RecordedEvent } from '../port.ts';
import { SCHEMA_VERSION } from './schema.ts';
import { createSqliteEventStore, type SqliteEventStoreOptions } from './sqlite-event-store.ts';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'relay-event-store-'));

eventStoreContract('sqlite', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'events.db');
  const store = createSqliteEventStore({ path: file });
  return {
    store,
    second: async (options) => createSqliteEventStore({ path: file, ...options }),
    quiet: async () => createSqliteEventStore({ path: file, pollIntervalMs: 600_000 }),
    teardown: async () => {
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
});

const storeModule = fileURLToPath(new URL('./sqlite-event-store.ts', import.meta.url));
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

/** A separate Node process that opens the store, appends one ~10 KB event to `crash-1`, then acts. */
const childScript = `
import fs from 'node:fs';
import { createSqliteEventStore } from ${JSON.stringify(storeModule)};
const store = createSqliteEventStore({ path: process.env.RELAY_DB, synchronous: 'normal' });
const result = await store.appendToStream('crash-1', [{ type: 'Written', data: { text: 'x'.repeat(10_000) } }], {
  expectedVersion: 1n,
});
fs.writeSync(1, JSON.stringify({ nextVersion: String(result.nextVersion), lastPosition: String(result.lastPosition) }));
if (process.env.RELAY_THEN === 'sigkill') process.kill(process.pid, 'SIGKILL');
await store.close();
`;

const runChild = async (dir: string, file: string, then: 'sigkill' | 'close') => {
  const script = path.join(dir, 'child.mts');
  fs.writeFileSync(script, childScript);
  const child = spawn(process.execPath, ['--import', 'tsx', script], {
    cwd: repoRoot,
    env: { ...process.env, RELAY_DB: file, RELAY_THEN: then },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.on('close', (c, s) => resolve([c, s])), // 'close': after its output is read, not only its exit
  );
  return { code, signal, stdout, stderr };
};

describe('SQLite event store (adapter specific)', () => {
  let dir: string;
  let file: string;
  const opened: EventStore[] = [];
  const open = (options: Partial<SqliteEventStoreOptions> = {}) => {
    const store = createSqliteEventStore({ path: file, ...options });
    opened.push(store);
    return store;
  };

  beforeEach(() => {
    dir = tempDir();
    file = path.join(dir, 'nested', 'events.db');
  });

  afterEach(async () => {
    await Promise.all(opened.splice(0).map((store) => store.close()));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates its directory, a WAL-mode file and schema version 4 (no index on recorded_at or type, no table of stream versions, no AUTOINCREMENT); positions are 1n, 2n, 3n...', async () => {
    const store = open();
    await store.appendToStream('a-1', [{ type: 'T', data: 1 }, { type: 'T', data: 2 }]);
    await store.appendToStream('b-1', [{ type: 'T', data: 3 }]);
    expect((await store.readAll()).map((e) => e.globalPosition)).toEqual([1n, 2n, 3n]);
    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('user_version', { simple: true })).toBe(4);
      expect(raw.prepare("SELECT name FROM sqlite_master WHERE name IN ('events_recorded_at', 'events_type_position', 'streams', 'sqlite_sequence')").all()).toEqual([]);
      expect(raw.prepare('SELECT stream_name, stream_version FROM events ORDER BY global_position').all()).toEqual([
        { stream_name: 'a-1', stream_version: 1 },
        { stream_name: 'a-1', stream_version: 2 },
        { stream_name: 'b-1', stream_version: 1 },
      ]);
      expect(raw.prepare('SELECT category FROM events ORDER BY global_position').pluck().all()).toEqual(['a', 'a', 'b']);
    } finally {
      raw.close();
    }
  });

  it('wakes subscriptions at once on commits of another thread of this process', async () => {
    const store = open({ pollIntervalMs: 600_000 });
    const seen: RecordedEvent[] = [];
    await store.subscribe({ after: 0n, handler: (events) => void seen.push(...events) }).catchUp();
    // A worker thread with a store of its own on the same file appends, then stays open.
    const worker = new Worker(new URL('./fixtures/append-in-thread.mjs', import.meta.url), { workerData: { file } });
    try {
      await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
      // Without the signal this would wait for the 10-minute poll.
      await vi.waitFor(() => expect(seen.map((e) => e.data)).toEqual(['from a thread']), { timeout: 1000, interval: 1 });
    } finally {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  });

  it('maps a write lock held too long (SQLITE_BUSY) to EventStoreUnavailableError, reads go on', async () => {
    const store = open({ busyTimeoutMs: 50 });
    await store.appendToStream('a-1', [{ type: 'T', data: 1 }]);
    const locker = new Database(file);
    locker.exec('BEGIN IMMEDIATE');
    try {
      const failure = await store.appendToStream('a-1', [{ type: 'T', data: 2 }]).catch((e: unknown) => e);
      expect(failure).toBeInstanceOf(EventStoreUnavailableError);
      expect((failure as Error).cause).toMatchObject({ code: 'SQLITE_BUSY' });
      await expect(store.storeCheckpoint('p', 1n)).rejects.toBeInstanceOf(EventStoreUnavailableError);
      await expect(store.ping()).resolves.toBeUndefined();
      expect((await store.readStream('a-1')).version).toBe(1n);
    } finally {
      locker.exec('ROLLBACK');
      locker.close();
    }
    expect((await store.appendToStream('a-1', [{ type: 'T', data: 2 }], { expectedVersion: 1n })).nextVersion).toBe(2n);
  });

  it('waits for a write lock held by another connection without stopping its thread, and commits once it is free', async () => {
    const store = open({ busyTimeoutMs: 5000 });
    await store.appendToStream('a-1', [{ type: 'T', data: 1 }]);
    const locker = new Database(file);
    locker.exec('BEGIN IMMEDIATE');
    // The lock is released by a timer of this very thread: SQLite's busy handler, which sleeps the
    // thread, would never let it run, and the append would fail after the busy timeout.
    const ticks: number[] = [];
    const ticker = setInterval(() => ticks.push(Date.now()), 5);
    const release = setTimeout(() => {
      locker.exec('COMMIT');
      locker.close();
    }, 150);
    try {
      const started = Date.now();
      const [second, third] = await Promise.all([
        store.appendToStream('a-1', [{ type: 'T', data: 2 }], { expectedVersion: 1n }),
        store.appendToStream('a-2', [{ type: 'T', data: 'other' }]),
      ]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      expect(second.nextVersion).toBe(2n);
      expect(third.nextVersion).toBe(1n);
      expect(ticks.length).toBeGreaterThanOrEqual(10);
    } finally {
      clearInterval(ticker);
      clearTimeout(release);
      if (locker.open) locker.close();
    }
    expect((await store.readStream('a-1')).events.map((e) => e.data)).toEqual([1, 2]);
  });

  it("tries an append that waits for the write lock again as soon as another thread's store says it committed", async () => {
    const store = open({ busyTimeoutMs: 60_000, pollIntervalMs: 600_000 });
    // Another store on the file, as the other thread of role `all` has: its commits are signalled.
    const other = open({ pollIntervalMs: 600_000 });
    await store.appendToStream('a-1', [{ type: 'T', data: 1 }]);
    const locker = new Database(file);
    locker.exec('BEGIN IMMEDIATE');
    // The millisecond retries never come: only the other store's signal can commit the append.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    const turns = async (n: number) => {
      for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    try {
      let done = false;
      const waiting = store.appendToStream('a-2', [{ type: 'T', data: 2 }]).then(() => (done = true));
      await turns(5);
      expect(done).toBe(false);
      locker.exec('COMMIT');
      await turns(5);
      expect(done).toBe(false); // the lock is free, but nobody said so
      await other.storeCheckpoint('somebody', 1n); // a commit of a checkpoint alone is signalled too
      for (let i = 0; i < 200 && !done; i++) await turns(1);
      expect(done).toBe(true);
      await waiting;
    } finally {
      vi.useRealTimers();
      locker.close();
    }
    expect((await store.readStream('a-2')).version).toBe(1n);
  });

  it('fails to open an unusable path with EventStoreUnavailableError', () => {
    expect(() => createSqliteEventStore({ path: dir })).toThrow(EventStoreUnavailableError);
  });

  it('keeps an append that resolved in a process SIGKILLed right after', async () => {
    const first = open({ synchronous: 'normal' });
    await first.appendToStream('crash-1', [{ type: 'Written', data: { text: 'before' } }]);
    await first.close();
    const child = await runChild(dir, file, 'sigkill');
    expect({ signal: child.signal, stderr: child.stderr }).toEqual({ signal: 'SIGKILL', stderr: '' });
    expect(JSON.parse(child.stdout)).toEqual({ nextVersion: '2', lastPosition: '2' });
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(10_000); // not checkpointed: no clean close
    const reopened = open();
    const { version, events } = await reopened.readStream('crash-1');
    expect(version).toBe(2n);
    expect(events.map((e) => [e.streamVersion, e.globalPosition, e.data])).toEqual([
      [1n, 1n, { text: 'before' }],
      [2n, 2n, { text: 'x'.repeat(10_000) }],
    ]);
  });

  it('delivers to a live subscriber what another process appends (polling)', async () => {
    const store = open({ pollIntervalMs: 10 });
    await store.appendToStream('crash-1', [{ type: 'Written', data: { text: 'before' } }]);
    const seen: RecordedEvent[] = [];
    await store.subscribe({ after: 1n, handler: (events) => void seen.push(...events) }).catchUp();
    const child = await runChild(dir, file, 'close');
    expect({ code: child.code, stderr: child.stderr }).toEqual({ code: 0, stderr: '' });
    await vi.waitFor(() => expect(seen.length).toBe(1), { timeout: 5000, interval: 5 });
    expect(seen.map((e) => [e.streamName, e.streamVersion, e.globalPosition, e.type])).toEqual([
      ['crash-1', 2n, 2n, 'Written'],
    ]);
  });
  it('delivers what another process appends by watching its -wal file, when it polls seldom otherwise', async () => {
    // Idle looks every 10 minutes: within the test, the watch makes it look (or, where the file
    // could not be watched, the busy polling it falls back to: commit-watch.integration.spec.ts
    // tests the watch itself).
    const store = open({ pollIntervalMs: 5, idlePollIntervalMs: 600_000 });
    await store.appendToStream('crash-1', [{ type: 'Written', data: { text: 'before' } }]);
    const seen: RecordedEvent[] = [];
    await store.subscribe({ after: 1n, handler: (events) => void seen.push(...events) }).catchUp();
    const child = await runChild(dir, file, 'close');
    expect({ code: child.code, stderr: child.stderr }).toEqual({ code: 0, stderr: '' });
    await vi.waitFor(() => expect(seen.map((e) => [e.streamName, e.streamVersion, e.globalPosition])).toEqual([['crash-1', 2n, 2n]]), { timeout: 5000, interval: 5 });
  });
  it("tells the other stores of its process what its poll found another process append, when it polls for them", async () => {
    const polling = open({ pollIntervalMs: 10, announcePolledCommits: true });
    await polling.appendToStream('crash-1', [{ type: 'Written', data: { text: 'before' } }]);
    // Another thread's store in this process, polling only every 10 minutes: it can see the
    // child's append within the test only by the announcement.
    const told = open({ pollIntervalMs: 600_000 });
    const seen: RecordedEvent[] = [];
    await told.subscribe({ after: 1n, handler: (events) => void seen.push(...events) }).catchUp();
    await polling.subscribe({ after: 1n, handler: () => undefined }).catchUp();
    const child = await runChild(dir, file, 'close');
    expect({ code: child.code, stderr: child.stderr }).toEqual({ code: 0, stderr: '' });
    await vi.waitFor(() => expect(seen.map((e) => [e.streamName, e.streamVersion, e.globalPosition])).toEqual([['crash-1', 2n, 2n]]), { timeout: 5000, interval: 5 });
  });

  describe('data keys, physically', () => {
    const keyOf = (id: string, wrapped: string): NewDataKey => ({
      id,
      scope: 'app-1',
      subject: `sendbatch-${id}`,
      wrapped,
      uses: 1,
      expiresAt: new Date(Date.now() + 3_600_000),
    });
    const holds = (target: string, bytes: Buffer): boolean => fs.existsSync(target) && fs.readFileSync(target).includes(bytes);
    /** Copies every WAL frame into the database file, as SQLite's own checkpoints do long before a key is destroyed. */
    const checkpointElsewhere = () => {
      const raw = new Database(file);
      try {
        raw.pragma('wal_checkpoint(PASSIVE)');
      } finally {
        raw.close();
      }
    };

    it('leaves no copy of a destroyed key in events.db or its -wal once the WAL is truncated', async () => {
      const attempts: boolean[] = [];
      const store = open({ walTruncateIntervalMs: 20, onWalTruncation: (truncated) => attempts.push(truncated) });
      const wrapped = `wrapped-${randomBytes(24).toString('hex')}`;
      const bytes = Buffer.from(wrapped);
      await store.appendToStream('sendbatch-1', [{ type: 'Sent', data: { n: 1 } }], { keys: { put: [keyOf('k1', wrapped), keyOf('k2', 'other')] } });
      checkpointElsewhere();
      expect(holds(file, bytes)).toBe(true);
      expect(holds(`${file}-wal`, bytes)).toBe(true);
      await store.appendToStream('shred-1', [{ type: 'KeyDestroyed', data: { id: 'k1' } }], { keys: { destroy: ['k1'] } });
      await vi.waitFor(() => expect(attempts).toContain(true), { timeout: 5000, interval: 5 });
      expect(fs.statSync(`${file}-wal`).size).toBe(0);
      expect(holds(file, bytes)).toBe(false);
      expect(holds(`${file}-wal`, bytes)).toBe(false);
      // The history and the other key are untouched; the store goes on.
      expect(await store.keys.get(['k1', 'k2'], new Date())).toEqual(new Map([['k2', 'other']]));
      expect((await store.readAll()).map((e) => e.type)).toEqual(['Sent', 'KeyDestroyed']);
      await store.appendToStream('a-1', [{ type: 'T', data: 1 }]);
      expect(await store.headPosition()).toBe(3n);
    });

    it('tries the truncation again while another connection reads an older snapshot, without holding up writes', async () => {
      const attempts: boolean[] = [];
      const store = open({ walTruncateIntervalMs: 10, onWalTruncation: (truncated) => attempts.push(truncated) });
      const wrapped = `wrapped-${randomBytes(24).toString('hex')}`;
      await store.appendToStream('sendbatch-1', [{ type: 'Sent', data: { n: 1 } }], { keys: { put: [keyOf('k1', wrapped)] } });
      const reader = new Database(file, { readonly: true });
      try {
        reader.exec('BEGIN');
        reader.prepare('SELECT count(*) FROM events').get(); // holds its snapshot, in the WAL
        await store.appendToStream('shred-1', [{ type: 'KeyDestroyed', data: { id: 'k1' } }], { keys: { destroy: ['k1'] } });
        await vi.waitFor(() => expect(attempts.length).toBeGreaterThanOrEqual(3), { timeout: 5000, interval: 5 });
        expect(attempts.every((truncated) => !truncated)).toBe(true);
        const started = Date.now();
        for (let n = 1; n <= 5; n++) await store.appendToStream('a-1', [{ type: 'T', data: n }]);
        expect(Date.now() - started).toBeLessThan(1000);
        expect(holds(`${file}-wal`, Buffer.from(wrapped))).toBe(true);
      } finally {
        reader.exec('COMMIT');
        reader.close();
      }
      await vi.waitFor(() => expect(attempts.at(-1)).toBe(true), { timeout: 5000, interval: 5 });
      expect(fs.statSync(`${file}-wal`).size).toBe(0);
      expect(holds(file, Buffer.from(wrapped))).toBe(false);
    });
  });

  describe('tags', () => {
    it('derives the tags of a file written before tags existed (schema 1), keeping its events and their streams’ versions', async () => {
      fs.mkdirSync(path.dirname(file), { recursive: true });
      const raw = new Database(file);
      raw.pragma('journal_mode = WAL');
      raw.exec(`
        CREATE TABLE events (
          global_position INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL UNIQUE, stream_name TEXT NOT NULL,
          category TEXT NOT NULL, stream_version INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL,
          metadata TEXT NOT NULL, recorded_at INTEGER NOT NULL, UNIQUE (stream_name, stream_version));
        CREATE INDEX events_category_position ON events (category, global_position);
        CREATE INDEX events_type_position ON events (type, global_position);
        CREATE INDEX events_recorded_at ON events (recorded_at);
        CREATE TABLE streams (stream_name TEXT PRIMARY KEY, version INTEGER NOT NULL) WITHOUT ROWID;
        CREATE TABLE checkpoints (name TEXT PRIMARY KEY, position INTEGER NOT NULL) WITHOUT ROWID;
        INSERT INTO events (event_id, stream_name, category, stream_version, type, data, metadata, recorded_at) VALUES
          ('e1', 'app-1', 'app', 1, 'AppCreated', '{"app":"x"}', '{}', 1700000000000),
          ('e2', 'app-2', 'app', 1, 'AppCreated', '{"app":"y"}', '{}', 1700000000001),
          ('e3', 'app-1', 'app', 2, 'AppRenamed', '{"app":"x"}', '{}', 1700000000002);
        INSERT INTO streams VALUES ('app-1', 2), ('app-2', 1);
        PRAGMA user_version = 1;`);
      raw.close();
      const store = open({ tagger: { version: '1', tagsOf: (event) => [`app:${(event.data as { app: string }).app}`] } });
      expect((await store.readAll({ filter: { tags: ['app:x'] } })).map((e) => e.id)).toEqual(['e1', 'e3']);
      expect((await store.readAll()).map((e) => [e.id, e.streamName, e.streamVersion, e.globalPosition])).toEqual([
        ['e1', 'app-1', 1n, 1n],
        ['e2', 'app-2', 1n, 2n],
        ['e3', 'app-1', 2n, 3n],
      ]);
      // Stream versions come from the events (the table of versions is gone): app-1 goes on at 3.
      await expect(store.appendToStream('app-1', [{ type: 'AppRenamed', data: { app: 'x' } }], { expectedVersion: 1n })).rejects.toThrow(ExpectedVersionConflictError);
      expect((await store.appendToStream('app-1', [{ type: 'AppRenamed', data: { app: 'x' } }], { expectedVersion: 2n })).nextVersion).toBe(3n);
      const check = new Database(file, { readonly: true });
      try {
        expect(check.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
        expect(check.prepare("SELECT name FROM sqlite_master WHERE name = 'streams'").all()).toEqual([]);
        expect(check.prepare("SELECT key, value FROM store_meta ORDER BY key").all()).toEqual([{ key: 'tagger.version', value: '1' }]);
      } finally {
        check.close();
      }
    });

    it('derives them once when two threads open the file with a new tagger version at the same moment', async () => {
      const count = 3_500; // more than three chunks of derivation
      const writer = open();
      await writer.appendToStream('bulk-1', Array.from({ length: count }, (_, i) => ({ type: 'T', data: { app: i % 5 } })));
      const calls = new SharedArrayBuffer(8);
      const workers = [0, 1].map(
        () => new Worker(new URL('./fixtures/open-with-tagger.mjs', import.meta.url), { workerData: { file, version: '7', calls, threads: 2 } }),
      );
      // Listened to from the start: a thread may exit right after its message, before a later listener would be there.
      const exited = workers.map((worker) => new Promise((resolve) => worker.once('exit', resolve)));
      await Promise.all(workers.map((worker) => new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject))));
      await Promise.all(exited);
      expect(new Int32Array(calls)[0]).toBe(count);
      let again = 0;
      const reader = open({ tagger: { version: '7', tagsOf: () => (again++, []) } });
      expect((await reader.readAll({ filter: { tags: ['app:3'] }, limit: 5_000 })).length).toBe(count / 5);
      expect(again).toBe(0);
    });
  });
});
