import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { EventStore, NewDataKey, RecordedEvent, StoredDataKey } from '../../infra/event-store/port.ts';
import { createPostgresEventStore } from '../../infra/event-store/postgres/postgres-event-store.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { copyEventStore, CopyError } from './event-store-copy.ts';

// Runs on the real stores: SQLite files and the PostgreSQL of the test run (DATABASE_URL, or the
// local server that .ci/run starts).
const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const opened: EventStore[] = [];
const schemas: string[] = [];
const dirs: string[] = [];

const sqlite = (): EventStore => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-copy-'));
  dirs.push(dir);
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
  opened.push(store);
  return store;
};

const postgres = (): EventStore => {
  const schema = `relay_copy_${randomBytes(5).toString('hex')}`;
  schemas.push(schema);
  const store = createPostgresEventStore({ connectionString, schema });
  opened.push(store);
  return store;
};

afterEach(async () => {
  await Promise.all(opened.splice(0).map((store) => store.close()));
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  if (schemas.length > 0) {
    const client = new pg.Client({ connectionString });
    await client.connect();
    for (const schema of schemas.splice(0)) await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
});

/**
 * A history like Relay's: interleaved streams of several categories, a long run of one stream
 * (more than one append's worth), metadata with actor and correlation id, data of every shape,
 * and times an hour apart.
 */
const writeHistory = async (store: EventStore): Promise<void> => {
  const start = Date.parse('2026-01-01T00:00:00.000Z');
  let clock = 0;
  const at = () => new Date(start + clock++ * 3_600_000);
  const meta = (i: number) => ({ actor: `credential:${i % 3}`, correlationId: `req-${i}` });
  for (let i = 1; i <= 40; i++) {
    await store.appendToStream(`app-${i % 4}`, [{ id: randomUUID(), type: 'AppRenamed', data: { name: `app ${i}`, emoji: 'héllo 👋', list: [i, null, true] }, metadata: meta(i), recordedAt: at() }]);
    await store.appendToStream(`outbound-batch${i}`, [
      { id: randomUUID(), type: 'MessagesAccepted', data: { count: i }, metadata: meta(i), recordedAt: at() },
      { id: randomUUID(), type: 'MessageDelivered', data: { n: i / 2 }, metadata: meta(i), recordedAt: at() },
    ]);
  }
  const long = Array.from({ length: 1_234 }, (_, i) => ({ id: randomUUID(), type: 'RecordsPopped', data: { offset: i }, recordedAt: at() }));
  await store.appendToStream('popcursor-inbound.a', long);
  await store.appendToStream('user-7', [{ id: randomUUID(), type: 'UserCreated', data: { email: 'a@example.com' }, metadata: { actor: 'cli' }, recordedAt: at() }]);
};

/** A history as an auditor sees it: everything but the store's own position numbers. */
const history = async (store: EventStore) => {
  const events: Omit<RecordedEvent, 'globalPosition'>[] = [];
  let after = 0n;
  for (;;) {
    const page = await store.readAll({ after, limit: 700 });
    if (page.length === 0) return events;
    for (const { globalPosition: _, ...rest } of page) events.push(rest);
    after = page.at(-1)!.globalPosition;
  }
};

/** Every data key of a store, in id order. */
const allKeys = async (store: EventStore) => {
  const keys: StoredDataKey[] = [];
  for (let afterId: string | undefined; ; ) {
    const page = await store.keys.list(afterId, 700);
    if (page.length === 0) return keys;
    keys.push(...page);
    afterId = page.at(-1)!.id;
  }
};

const eventAt = async (store: EventStore, position: bigint) => {
  const [event] = await store.readAll({ after: position - 1n, limit: 1 });
  expect(event?.globalPosition).toBe(position);
  return event!;
};

describe('relay events copy: a whole history from one store to another', () => {
  it('copies SQLite to PostgreSQL and back: equal histories, ids, versions, times, and checkpoints that cover the same events', async () => {
    const original = sqlite();
    await writeHistory(original);
    await original.storeCheckpoint('publisher', 100n);
    await original.storeCheckpoint('provisioner', 1_300n);
    const total = 40 * 3 + 1_234 + 1;
    const head = await original.headPosition();
    await original.storeCheckpoint('event-topics', head);

    const onPostgres = postgres();
    const progress: bigint[] = [];
    const there = await copyEventStore(original, onPostgres, { onProgress: (p) => progress.push(p.position) });
    expect(there).toMatchObject({ copied: total, skipped: 0, sourceEvents: total, targetEvents: total, streams: 4 + 40 + 1 + 1, sourceHead: head });
    expect(progress.at(-1)).toBe(head);
    expect(await history(onPostgres)).toEqual(await history(original));

    // Each translated checkpoint points at the copy of the very event the original pointed at.
    for (const name of ['publisher', 'provisioner', 'event-topics']) {
      const [from, to] = there.checkpoints[name]!;
      expect(from).toBe(await original.readCheckpoint(name));
      expect(await onPostgres.readCheckpoint(name)).toBe(to);
      expect((await eventAt(onPostgres, to)).id).toBe((await eventAt(original, from)).id);
    }

    const back = sqlite();
    const report = await copyEventStore(onPostgres, back);
    expect(report).toMatchObject({ copied: total, skipped: 0, sourceEvents: total, targetEvents: total });
    expect(await history(back)).toEqual(await history(original));
    // The copy's own resume mark (relay-copy:<id of the first event>) is not copied along.
    const firstId = (await eventAt(original, 1n)).id;
    expect(await back.listCheckpoints()).toEqual(
      new Map([
        ['event-topics', head],
        ['provisioner', 1_300n],
        ['publisher', 100n],
        [`relay-copy:${firstId}`, head],
      ]),
    );
  });

  it('translates checkpoints where the positions differ (PostgreSQL has gaps where a write was rolled back)', async () => {
    const original = postgres();
    const ids: string[] = [];
    for (let i = 1; i <= 6; i++) {
      const id = randomUUID();
      ids.push(id);
      await original.appendToStream(`app-${i}`, [{ id, type: 'AppCreated', data: { i } }]);
      // A duplicate id: the append rolls back, and its identity value is gone (a gap).
      await expect(original.appendToStream(`app-x${i}`, [{ id, type: 'AppCreated', data: {} }])).rejects.toThrow();
    }
    const positions = (await original.readAll()).map((e) => e.globalPosition);
    expect(positions).toEqual([1n, 3n, 5n, 7n, 9n, 11n]);
    await original.storeCheckpoint('publisher', 7n); // at the 4th event
    await original.storeCheckpoint('provisioner', 8n); // in a gap: after the 4th event, before the 5th
    await original.storeCheckpoint('event-topics', 11n);

    const copy = sqlite();
    const report = await copyEventStore(original, copy);
    expect((await copy.readAll()).map((e) => e.globalPosition)).toEqual([1n, 2n, 3n, 4n, 5n, 6n]);
    expect(report.checkpoints).toEqual({ 'event-topics': [11n, 6n], provisioner: [8n, 4n], publisher: [7n, 4n] });
    expect(await copy.readCheckpoint('provisioner')).toBe(4n);
    expect((await copy.readAll()).map((e) => e.id)).toEqual(ids);
  });

  it('resumes an interrupted copy: nothing twice, nothing missing', async () => {
    const total = 40 * 3 + 1_234 + 1;
    const original = sqlite();
    await writeHistory(original);
    // Pages of 1,000 events: page 1 is 82 appends (80 interleaved, then the long stream's first
    // 880 events in chunks of 500 and 380); page 2 is 2 (its last 354 events, then user-7).
    const interruptedAt = async (failingAppend: number) => {
      const onPostgres = postgres();
      let appends = 0;
      const failing: EventStore = {
        ...onPostgres,
        appendToStream: async (...args) => {
          if (++appends === failingAppend) throw new Error('connection lost');
          return onPostgres.appendToStream(...args);
        },
      };
      await expect(copyEventStore(original, failing)).rejects.toThrow('connection lost');
      const partial = (await history(onPostgres)).length;
      const report = await copyEventStore(original, onPostgres);
      expect(await history(onPostgres)).toEqual(await history(original));
      expect(report.sourceEvents).toBe(total);
      // Run again: nothing left to do, and still verified equal.
      expect(await copyEventStore(original, onPostgres)).toMatchObject({ copied: 0, skipped: 0, sourceEvents: total, targetEvents: total });
      return { partial, copied: report.copied, skipped: report.skipped };
    };
    // In the first page: that page is read again, and what it had copied is skipped.
    // 29 appends: 15 of one event, 14 of two.
    expect(await interruptedAt(30)).toEqual({ partial: 43, copied: total - 43, skipped: 43 });
    // In the second: the first is not read again.
    expect(await interruptedAt(84)).toEqual({ partial: 1_000 + 354, copied: 1, skipped: 354 });
  });

  it('refuses a target that holds other events, and reports a target that was changed after the copy', async () => {
    const original = sqlite();
    await writeHistory(original);
    const other = sqlite();
    await other.appendToStream('app-1', [{ type: 'AppCreated', data: {} }]);
    await expect(copyEventStore(original, other)).rejects.toThrow(
      new CopyError('The target store already holds events, and no copy of this source to resume: copy into an empty store'),
    );
    expect((await history(other)).length).toBe(1);

    const copy = sqlite();
    await copyEventStore(original, copy);
    await copy.appendToStream('app-9', [{ type: 'AppCreated', data: {} }]);
    await expect(copyEventStore(original, copy)).rejects.toThrow(/^Verification failed: the target has events the source does not \(first: app-9@1 \(AppCreated/);
  });

  it('copies an empty store as nothing', async () => {
    expect(await copyEventStore(sqlite(), postgres())).toEqual({
      copied: 0,
      skipped: 0,
      sourceEvents: 0,
      targetEvents: 0,
      streams: 0,
      sourceHead: 0n,
      targetHead: 0n,
      checkpoints: {},
      keys: 0,
    });
  });

  it('copies events holding NUL and unpaired surrogates from SQLite to PostgreSQL, and verifies them', async () => {
    const original = sqlite();
    const odd = ['\u0000', 'a\u0000b', '\ud800', '\udfff', 'x\ud83d', '\ud83dy', '\ud83d\ude00', '\ufffe\uffff', '\u2028'];
    await writeHistory(original);
    await original.appendToStream('inbound-odd', [
      { id: randomUUID(), type: 'MessageReceived', data: { text: odd.join(''), parts: odd, 'k\u0000': '\udc00' }, metadata: { actor: 'user:\ud800' } },
      { id: randomUUID(), type: 'MessageReceived', data: '\u0000' },
    ]);
    await original.appendToStream('app-1', [{ id: randomUUID(), type: 'AppRenamed', data: { name: '\ud800\u0000' } }]);
    const total = 40 * 3 + 1_234 + 1 + 3;
    const onPostgres = postgres();
    const report = await copyEventStore(original, onPostgres);
    expect(report).toMatchObject({ copied: total, sourceEvents: total, targetEvents: total });
    expect(await history(onPostgres)).toEqual(await history(original));
    const [received] = (await onPostgres.readStream('inbound-odd')).events;
    expect(received!.data).toEqual({ text: odd.join(''), parts: odd, 'k\u0000': '\udc00' });
    expect(received!.metadata).toEqual({ actor: 'user:\ud800' });
    // And back: the PostgreSQL history is an equal source.
    const back = sqlite();
    expect((await copyEventStore(onPostgres, back)).targetEvents).toBe(total);
    expect(await history(back)).toEqual(await history(original));
  });

  it('copies the data keys that exist, as they are, and verifies them; events of destroyed keys stay as they were', async () => {
    const original = sqlite();
    const expiresAt = new Date('2030-01-01T00:00:00.000Z');
    const key = (id: string, extra: Partial<NewDataKey> = {}): NewDataKey => ({ id, scope: 'app-1', subject: `sendbatch-${id}`, wrapped: `wrapped:${id}`, uses: 2, expiresAt, ...extra });
    const sealed = { ciphertext: 'c2VhbGVk', keyId: 'k-gone' };
    await original.appendToStream('sendbatch-1', [{ id: randomUUID(), type: 'MessagesAccepted', data: sealed }], {
      keys: { put: [key('k-gone'), key('k-live'), key('k-other', { scope: 'app-2', uses: 3 })] },
    });
    await original.appendToStream('sendbatch-1', [{ id: randomUUID(), type: 'MessageDelivered', data: {} }], { keys: { release: ['k-live'], retireScopes: ['app-2'] } });
    await original.appendToStream('keyshred-1', [{ id: randomUUID(), type: 'DataKeyDestroyed', data: { keyId: 'k-gone' } }], { keys: { destroy: ['k-gone'] } });
    // More keys than one page of the copy.
    for (let i = 0; i < 3; i++) {
      await original.appendToStream(`sendbatch-bulk${i}`, [{ id: randomUUID(), type: 'MessagesAccepted', data: { i } }], {
        keys: { put: Array.from({ length: 1_000 }, (_, j) => key(`bulk-${i}-${String(j).padStart(4, '0')}`, { uses: 1 })) },
      });
    }
    const expected = await allKeys(original);
    expect(expected.length).toBe(3_002);

    const onPostgres = postgres();
    // Interrupted after the first page of keys: a new run imports the rest.
    let imports = 0;
    const failing: EventStore = {
      ...onPostgres,
      keys: {
        ...onPostgres.keys,
        import: async (keys) => {
          if (++imports === 2) throw new Error('connection lost');
          return onPostgres.keys.import(keys);
        },
      },
    };
    await expect(copyEventStore(original, failing)).rejects.toThrow('connection lost');
    expect((await allKeys(onPostgres)).length).toBe(1_000);
    const report = await copyEventStore(original, onPostgres);
    expect(report).toMatchObject({ sourceEvents: 6, targetEvents: 6, keys: 3_002 });
    expect(await allKeys(onPostgres)).toEqual(expected);
    expect((await onPostgres.keys.list(undefined, 2)).map((k) => [k.id, k.usesLeft, k.scopeRetired])).toEqual([
      ['bulk-0-0000', 1, false],
      ['bulk-0-0001', 1, false],
    ]);
    expect(await onPostgres.keys.get(['k-gone', 'k-live', 'k-other'], new Date('2029-01-01T00:00:00.000Z'))).toEqual(new Map([['k-live', 'wrapped:k-live']]));
    expect((await onPostgres.readStream('sendbatch-1')).events[0]!.data).toEqual(sealed);

    // A key that differs afterwards fails the verification of the next run.
    await onPostgres.keys.release(['k-live']);
    await expect(copyEventStore(original, onPostgres)).rejects.toThrow(
      new CopyError('Verification failed: data key k-live (scope app-1, sendbatch-k-live, 1/2 uses left, expires 2030-01-01T00:00:00.000Z) in the source is k-live (scope app-1, sendbatch-k-live, 0/2 uses left, expires 2030-01-01T00:00:00.000Z) in the target'),
    );
    // So does a key the source does not have.
    const extra = sqlite();
    await copyEventStore(original, extra);
    await extra.keys.import([{ ...key('a-extra'), usesLeft: 2, scopeRetired: false }]);
    await expect(copyEventStore(original, extra)).rejects.toThrow(/^Verification failed: the target has a data key the source does not: a-extra/);
  });
});
