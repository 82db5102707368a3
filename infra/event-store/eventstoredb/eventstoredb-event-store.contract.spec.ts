import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { eventStoreContract } from '../../../test/contracts/event-store.contract.ts';
import { dockerEngineAvailable } from '../../../test/support/docker.ts';
import type { EventStore } from '../port.ts';
import { createPostgresKeyVault } from '../postgres/postgres-event-store.ts';
import { createEventStoreDbEventStore, type EventStoreDbEventStoreOptions } from './eventstoredb-event-store.ts';

/**
 * The EventStore contract on a real EventStoreDB: the server at `EVENTSTORE_URL` when set (e.g.
 * `esdb://127.0.0.1:2113?tls=false`); else, where a Docker engine runs, a throw-away
 * `eventstore/eventstore:24.10` (the last EventStoreDB-named LTS, the server line the 6.x client
 * was released against) in insecure, in-memory mode through testcontainers; else the suite is
 * skipped and says why. Every test gets a fresh namespace, so one server serves them all (and an
 * `EVENTSTORE_URL` server keeps their streams, each under its own `t<hex>_` prefix).
 */
const IMAGE = 'eventstore/eventstore:24.10';
const SKIP_REASON =
  'skipped: no EventStoreDB here; set EVENTSTORE_URL (e.g. esdb://127.0.0.1:2113?tls=false) or run a Docker engine (testcontainers starts ' +
  IMAGE +
  ')';

const freshNamespace = () => `t${randomBytes(6).toString('hex')}_`;

/**
 * The data keys of the contract's tests live in a PostgreSQL key vault (ESDB keeps none), on the
 * PostgreSQL of the test run when it answers; without one the key tests are skipped.
 */
const postgresUrl = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const postgresAnswers = async (): Promise<boolean> => {
  const client = new pg.Client({ connectionString: postgresUrl, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
};
const dropSchema = async (schema: string): Promise<void> => {
  const client = new pg.Client({ connectionString: postgresUrl });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
};

type Server = { readonly url: string; readonly stop: () => Promise<void> } | { readonly skip: string } | { readonly fail: string };

const startServer = async (): Promise<Server> => {
  const url = process.env.EVENTSTORE_URL;
  if (url) {
    // Asked for explicitly: an unreachable server fails the suite instead of skipping it.
    const probe = createEventStoreDbEventStore({ connectionString: url, namespace: freshNamespace() });
    try {
      await probe.ping();
      return { url, stop: async () => undefined };
    } catch (error) {
      return { fail: `EVENTSTORE_URL=${url} does not answer: ${error instanceof Error ? error.message : String(error)}` };
    } finally {
      await probe.close();
    }
  }
  if (!dockerEngineAvailable()) return { skip: SKIP_REASON };
  const { GenericContainer, Wait } = await import('testcontainers');
  const container = await new GenericContainer(IMAGE)
    .withEnvironment({
      EVENTSTORE_INSECURE: 'true',
      EVENTSTORE_RUN_PROJECTIONS: 'None',
      EVENTSTORE_MEM_DB: 'true',
      EVENTSTORE_CLUSTER_SIZE: '1',
    })
    .withExposedPorts(2113)
    .withWaitStrategy(Wait.forHttp('/health/live', 2113).forStatusCode(204))
    .withStartupTimeout(120_000)
    .start();
  return {
    url: `esdb://${container.getHost()}:${container.getMappedPort(2113)}?tls=false`,
    stop: async () => {
      await container.stop();
    },
  };
};

const server = await startServer();

if ('skip' in server) {
  // Also on stderr: vitest's default reporter names a skipped file without its suites' titles.
  console.warn(`EventStore contract: eventstoredb — ${server.skip}`);
  describe.skip(`EventStore contract: eventstoredb — ${server.skip}`, () => {
    it('needs an EventStoreDB server', () => undefined);
  });
} else if ('fail' in server) {
  it('EventStoreDB is reachable (EVENTSTORE_URL is set)', () => {
    throw new Error(server.fail);
  });
} else {
  const { url } = server;
  afterAll(() => server.stop());

  const withVault = await postgresAnswers();

  eventStoreContract('eventstoredb', async () => {
    const namespace = freshNamespace();
    const vaultSchema = `relay_esdb_${randomBytes(5).toString('hex')}`;
    const vault = withVault ? createPostgresKeyVault({ connectionString: postgresUrl, schema: vaultSchema }) : undefined;
    const open = (options: Partial<EventStoreDbEventStoreOptions> = {}) =>
      createEventStoreDbEventStore({ connectionString: url, namespace, ...(vault === undefined ? {} : { vault }), ...options });
    const store = open();
    return {
      store,
      second: async (options) => open(options),
      // Subscriptions of ESDB are pushed by the server: there is no poll to turn off.
      quiet: async () => open(),
      quirks: {
        partialBatches: true,
        duplicateIdsAcrossStreams: true,
        tagsDerivedOnRead: true,
        keysBesideTheAppend: true,
        noKeys: vault === undefined,
      },
      teardown: async () => {
        await store.close();
        if (vault !== undefined) {
          await vault.close();
          await dropSchema(vaultSchema);
        }
      },
    };
  });

  describe('EventStoreDB event store (adapter specific)', () => {
    const opened: EventStore[] = [];
    const open = (namespace = freshNamespace()) => {
      const store = createEventStoreDbEventStore({ connectionString: url, namespace });
      opened.push(store);
      return store;
    };

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
    });

    it('keeps namespaces apart: streams, positions from 1n, checkpoints', async () => {
      const a = open();
      const b = open();
      await a.appendToStream('order-1', [{ type: 'T', data: 'a' }]);
      await b.appendToStream('order-1', [{ type: 'T', data: 'b1' }, { type: 'T', data: 'b2' }]);
      await a.storeCheckpoint('publisher', 1n);
      expect((await a.readStream('order-1')).events.map((e) => [e.data, e.globalPosition])).toEqual([['a', 1n]]);
      expect((await b.readAll()).map((e) => e.data)).toEqual(['b1', 'b2']);
      expect((await b.readAll())[0]!.globalPosition).toBe(1n);
      expect(await b.listCheckpoints()).toEqual(new Map());
      expect(await a.listCheckpoints()).toEqual(new Map([['publisher', 1n]]));
    });

    it('reads and subscribes after a position that is not an event’s (starting the server at the log start)', async () => {
      const store = open();
      const { lastPosition } = await store.appendToStream('a-1', [{ type: 'T', data: 1 }]);
      await store.appendToStream('a-1', [{ type: 'T', data: 2 }]);
      expect((await store.readAll({ after: lastPosition + 1n })).map((e) => e.data)).toEqual([2]);
      const seen: unknown[] = [];
      const subscription = store.subscribe({ after: lastPosition + 1n, handler: (events) => void seen.push(...events.map((e) => e.data)) });
      await subscription.catchUp();
      await subscription.stop();
      expect(seen).toEqual([2]);
    });

    it('does not duplicate a re-append of the same event ids (ESDB idempotent writes)', async () => {
      const store = open();
      const events = [{ id: '7d1c8f0a-0000-4000-8000-000000000001', type: 'T', data: 1 }];
      await store.appendToStream('a-1', events);
      await store.appendToStream('a-1', events).catch(() => undefined);
      expect((await store.readStream('a-1')).version).toBe(1n);
    });

    it('never returns its own origin and checkpoint streams', async () => {
      const store = open();
      await store.storeCheckpoint('publisher', 5n);
      await store.appendToStream('a-1', [{ type: 'T', data: 1 }]);
      await store.storeCheckpoint('publisher', 6n);
      expect((await store.readAll()).map((e) => e.streamName)).toEqual(['a-1']);
      expect(await store.headPosition()).toBe(1n);
    });
  });
}
