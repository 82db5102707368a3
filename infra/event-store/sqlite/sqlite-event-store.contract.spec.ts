import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { eventStoreContract } from '../../../test/contracts/event-store.contract.ts';
import { EventStoreUnavailableError, type EventStore, type RecordedEvent } from '../port.ts';
import { createSqliteEventStore, type SqliteEventStoreOptions } from './sqlite-event-store.ts';

const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'relay-event-store-'));

eventStoreContract('sqlite', async () => {
  const dir = tempDir();
  const file = path.join(dir, 'events.db');
  const store = createSqliteEventStore({ path: file });
  return {
    store,
    second: async () => createSqliteEventStore({ path: file }),
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
    child.on('exit', (c, s) => resolve([c, s])),
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

  it('creates its directory, a WAL-mode file and schema version 1; positions are 1n, 2n, 3n...', async () => {
    const store = open();
    await store.appendToStream('a-1', [{ type: 'T', data: 1 }, { type: 'T', data: 2 }]);
    await store.appendToStream('b-1', [{ type: 'T', data: 3 }]);
    expect((await store.readAll()).map((e) => e.globalPosition)).toEqual([1n, 2n, 3n]);
    const raw = new Database(file, { readonly: true });
    try {
      expect(raw.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(raw.pragma('user_version', { simple: true })).toBe(1);
      expect(raw.prepare('SELECT stream_name, version FROM streams ORDER BY stream_name').all()).toEqual([
        { stream_name: 'a-1', version: 2 },
        { stream_name: 'b-1', version: 1 },
      ]);
      expect(raw.prepare('SELECT category FROM events ORDER BY global_position').pluck().all()).toEqual(['a', 'a', 'b']);
    } finally {
      raw.close();
    }
  });

  it('replays a backlog in full batches of batchSize', async () => {
    const store = open();
    await store.appendToStream('a-1', [1, 2, 3, 4, 5, 6, 7].map((n) => ({ type: 'T', data: n })));
    const sizes: number[] = [];
    const subscription = store.subscribe({ after: 0n, batchSize: 3, handler: (events) => void sizes.push(events.length) });
    await subscription.catchUp();
    expect(sizes).toEqual([3, 3, 1]);
  });

  it('wakes subscriptions on its own commits without waiting for a poll', async () => {
    const store = open({ pollIntervalMs: 600_000 });
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribe({ after: 0n, handler: (events) => void seen.push(...events) });
    await store.appendToStream('a-1', [{ type: 'T', data: 'history' }]);
    await subscription.catchUp();
    await new Promise((resolve) => setTimeout(resolve, 20)); // idle: only an after-commit wake can deliver now
    await store.appendToStream('a-1', [{ type: 'T', data: 'live' }]);
    await vi.waitFor(() => expect(seen.map((e) => e.data)).toEqual(['history', 'live']), { timeout: 1000, interval: 1 });
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

  it('catchUp sees commits of another connection even before the next poll', async () => {
    const store = open({ pollIntervalMs: 600_000 });
    const other = open();
    const seen: RecordedEvent[] = [];
    const subscription = store.subscribe({ after: 0n, handler: (events) => void seen.push(...events) });
    await other.appendToStream('a-1', [{ type: 'T', data: 'elsewhere' }]);
    await subscription.catchUp();
    expect(seen.map((e) => e.data)).toEqual(['elsewhere']);
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

  it('fails to open an unusable path with EventStoreUnavailableError', () => {
    expect(() => createSqliteEventStore({ path: dir })).toThrow(EventStoreUnavailableError);
  });

  it('rejects a duplicate event id with a plain error and writes nothing', async () => {
    const store = open();
    const id = '7d1c8f0a-0000-4000-8000-000000000001';
    await store.appendToStream('a-1', [{ id, type: 'T', data: 1 }]);
    const failure = await store.appendToStream('b-1', [{ id, type: 'T', data: 2 }]).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Error);
    expect(failure).not.toBeInstanceOf(EventStoreUnavailableError);
    expect((failure as Error).message).toBe('Appending to b-1: an event with the same id already exists');
    expect(await store.readStream('b-1')).toEqual({ version: 0n, events: [] });
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
});
