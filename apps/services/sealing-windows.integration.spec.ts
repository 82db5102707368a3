/**
 * Sealing windows on PostgreSQL, where appends run in transactions of their own: a send that takes
 * a window's key while the append that puts it has not committed yet must not depend on it (its
 * require would find no key: DataKeyGoneError, and the send answered 503 under concurrent load).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import { createPostgresEventStore } from '../../infra/event-store/postgres/postgres-event-store.ts';
import { SealingWindows } from './sealing-windows.ts';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const schema = `relay_test_${randomBytes(6).toString('hex')}`;
const store = createPostgresEventStore({ connectionString, schema });
const windows = new SealingWindows(createMessageSealer(createSecretBox('55'.repeat(32))), store.keys, { windowMs: 60_000, maxUses: 100, retentionMs: 86_400_000 }, pino({ level: 'silent' }));

afterAll(async () => {
  await windows.close();
  await store.close();
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
});

describe('sealing windows on PostgreSQL', () => {
  it('an append that takes the window while its key is not yet stored commits before the one that stores it', async () => {
    const now = new Date();
    const first = windows.take('app_1', 'sendbatch-b1', 1, now);
    const second = windows.take('app_1', 'sendbatch-b2', 1, now);
    // The second append commits first, as a concurrent send may.
    await store.appendToStream('sendbatch-b2', [{ type: 'Test', data: {} }], { keys: second.change });
    await store.appendToStream('sendbatch-b1', [{ type: 'Test', data: {} }], { keys: first.change });
    windows.settled(first.change, true);
    const third = windows.take('app_1', 'sendbatch-b3', 1, now);
    expect(third.change).toEqual({ require: [first.key.id] });
    await store.appendToStream('sendbatch-b3', [{ type: 'Test', data: {} }], { keys: third.change });
    expect((await store.keys.get([first.key.id, second.key.id], now)).size).toBe(2);
  });
});
