import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { CuttableProxy } from '../../../test/support/tcp-cut.ts';
import { EventStoreUnavailableError, type EventStore } from '../port.ts';
import { createPostgresEventStore } from './postgres-event-store.ts';

/**
 * The PostgreSQL store cut off from its server without a word (a network partition: no reset, no
 * FIN; test/support/tcp-cut.ts), issue 48: its operations fail with EventStoreUnavailableError
 * (the interface's 503) within the query timeout instead of waiting as long as the cut, and it
 * serves again once the network heals.
 */
const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const reachable = async (): Promise<boolean> => {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
};

const schema = `relay_test_cut_${randomBytes(6).toString('hex')}`;
let proxy: CuttableProxy | undefined;
let store: EventStore | undefined;
afterEach(async () => {
  proxy?.heal();
  await store?.close();
  await proxy?.close();
  const client = new pg.Client({ connectionString });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).finally(() => client.end());
});

describe.skipIf(!(await reachable()))('the PostgreSQL event store cut off from its server', () => {
  it('fails appends and reads with EventStoreUnavailableError within its query timeout, and serves again when the network heals', async () => {
    const target = new URL(connectionString);
    proxy = await CuttableProxy.start({ host: target.hostname, port: Number(target.port || 5432) });
    const viaProxy = new URL(connectionString);
    viaProxy.hostname = '127.0.0.1';
    viaProxy.port = String(proxy.port);
    store = createPostgresEventStore({ connectionString: viaProxy.toString(), schema, queryTimeoutMs: 1_000, connectionTimeoutMs: 1_000 });
    await store.appendToStream('thing-1', [{ type: 'Made', data: {} }]);

    proxy.cut();
    const started = Date.now();
    const outcomes = await Promise.allSettled([store.appendToStream('thing-1', [{ type: 'Changed', data: {} }]), store.readStream('thing-1')]);
    const took = Date.now() - started;
    for (const outcome of outcomes) expect(outcome.status === 'rejected' && outcome.reason).toBeInstanceOf(EventStoreUnavailableError);
    expect(took).toBeLessThan(5_000);

    proxy.heal();
    await expect.poll(async () => (await store!.readStream('thing-1').catch(() => undefined))?.events.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    await store.appendToStream('thing-1', [{ type: 'Changed again', data: {} }]);
    const types = (await store.readStream('thing-1')).events.map((e) => e.type);
    expect(types[0]).toBe('Made');
    expect(types.at(-1)).toBe('Changed again');
  });
});
