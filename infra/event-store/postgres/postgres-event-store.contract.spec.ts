import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { dropSchema, noPostgres, POSTGRES_URL, postgresUnreachable } from '../../../test/support/postgres-server.ts';
import { eventStoreContract } from '../../../test/contracts/event-store.contract.ts';
import { DataKeyGoneError, EventStoreUnavailableError, ExpectedVersionConflictError, type EventStore, type RecordedEvent } from '../port.ts';
import { createPostgresEventStore, createPostgresKeyVault, type PostgresEventStoreOptions } from './postgres-event-store.ts';
import { POSITION_LOCK_CLASS } from './schema.ts';

const connectionString = POSTGRES_URL;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

const freshSchema = () => `relay_test_${randomBytes(6).toString('hex')}`;

const reason = await postgresUnreachable();

if (reason !== undefined) {
  noPostgres('PostgreSQL event store', reason);
} else {
  eventStoreContract('postgres', async () => {
    const schema = freshSchema();
    const store = createPostgresEventStore({ connectionString, schema });
    return {
      store,
      second: async (options) => createPostgresEventStore({ connectionString, schema, ...options }),
      quiet: async () => createPostgresEventStore({ connectionString, schema, pollIntervalMs: 600_000 }),
      teardown: async () => {
        await store.close();
        await dropSchema(schema);
      },
    };
  });

  describe('PostgreSQL event store (adapter specific)', () => {
    const opened: EventStore[] = [];
    const schemas: string[] = [];
    const open = (options: Partial<PostgresEventStoreOptions> = {}) => {
      const schema = options.schema ?? freshSchema();
      schemas.push(schema);
      const store = createPostgresEventStore({ connectionString, schema, ...options });
      opened.push(store);
      return store;
    };

    afterEach(async () => {
      await Promise.all(opened.splice(0).map((store) => store.close()));
      for (const schema of schemas.splice(0)) await dropSchema(schema);
    });

    const admin = async <T>(work: (client: pg.Client) => Promise<T>): Promise<T> => {
      const client = new pg.Client({ connectionString });
      await client.connect();
      try {
        return await work(client);
      } finally {
        await client.end();
      }
    };

    it("wakes another process's subscriptions by PostgreSQL's notification of an append, not by polling (a quiet instance asks about once a second)", async () => {
      const writer = open();
      await writer.appendToStream('a-1', [{ type: 'T', data: 'first' }]);
      // Polls every 10 minutes: only the notification can wake it within the deadline.
      const listener = open({ schema: schemas.at(-1)!, pollIntervalMs: 600_000 });
      const seen: unknown[] = [];
      const subscription = listener.subscribe({ after: 0n, handler: (events) => void seen.push(...events.map((e) => e.data)) });
      try {
        await subscription.catchUp();
        expect(seen).toEqual(['first']);
        // Its listening connection is up (its last statement was the LISTEN of the schema's channel).
        await vi.waitFor(async () => {
          const rows = await admin((client) => client.query(`SELECT 1 FROM pg_stat_activity WHERE query LIKE 'LISTEN "relay_appended_%' AND state = 'idle'`));
          expect(rows.rowCount).toBeGreaterThan(0);
        }, { timeout: 5_000, interval: 50 });
        await writer.appendToStream('a-1', [{ type: 'T', data: 'told' }]);
        await vi.waitFor(() => expect(seen).toEqual(['first', 'told']), { timeout: 2_000, interval: 10 });
      } finally {
        await subscription.stop();
      }
    });

    it('reads several categories by their index ranges, not by a walk over the events of others in between', async () => {
      const store = open();
      const schema = schemas.at(-1)!;
      // Apps made before (the categories read are common in the table, none of them after the checkpoint but two).
      await store.appendToStream('app-0', [{ type: 'AppCreated', data: {} }]);
      await admin((client) =>
        client.query(`INSERT INTO "${schema}".events (event_id, stream_name, category, stream_version, type, data, metadata)
                      SELECT 'a' || n, 'app-a' || n, 'app', 1, 'AppCreated', '{}', '{}' FROM generate_series(1, 20000) AS n`),
      );
      await store.appendToStream('user-1', [{ type: 'UserRegistered', data: {} }]);
      await store.appendToStream('app-1', [{ type: 'AppCreated', data: {} }]);
      // A history grown by 30,000 events of another category (as the scale bench's: deliveries).
      await admin((client) =>
        client.query(`INSERT INTO "${schema}".events (event_id, stream_name, category, stream_version, type, data, metadata)
                      SELECT 'x' || n, 'outbound-' || n, 'outbound', 1, 'MessageDelivered', '{}', '{}' FROM generate_series(1, 30000) AS n`),
      );
      await store.appendToStream('group-1', [{ type: 'GroupCreated', data: {} }]);
      await admin((client) => client.query(`VACUUM (ANALYZE) "${schema}".events`));
      const after = (await store.readStream('user-1')).events[0]!.globalPosition;
      expect((await store.readAll({ after, filter: { categories: ['user', 'app', 'group', 'app'] } })).map((e) => e.streamName)).toEqual(['app-1', 'group-1']);
      expect((await store.readAll({ after, limit: 1, filter: { categories: ['group', 'app'] } })).map((e) => e.streamName)).toEqual(['app-1']);
      // What the read costs: the rows its plan looked at and dropped (the primary key's walk drops 30,000).
      const { readAllSql } = await import('./read-sql.ts');
      const sql = readAllSql(schema, { categories: 'many', streams: 'none', types: 'none', since: false, until: false, tags: false });
      // Sequential scans off, as on a large table (9.4 million events), where they cost most: at this size the planner reads the table whole.
      const plan = await admin(async (client) => {
        await client.query('SET enable_seqscan = off');
        return client.query(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, [String(after), 500, 4_194_304, ['user', 'app', 'group']]);
      });
      let dropped = 0;
      const walk = (node: Record<string, unknown>) => {
        dropped += Number(node['Rows Removed by Filter'] ?? 0);
        for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
      };
      walk((plan.rows[0]['QUERY PLAN'] as Array<{ Plan: Record<string, unknown> }>)[0]!.Plan);
      expect(dropped).toBeLessThan(100);
    });

    it('migrates a schema of JSONB columns to JSON, keeping its rows, and then keeps any JSON text', async () => {
      const schema = freshSchema();
      schemas.push(schema);
      // The tables and the append function as the previous version of the store made them.
      await admin(async (client) => {
        await client.query(`
          CREATE SCHEMA "${schema}";
          CREATE TABLE "${schema}".events (
            global_position BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            transaction_id xid8 NOT NULL DEFAULT pg_current_xact_id(),
            event_id TEXT NOT NULL UNIQUE, stream_name TEXT NOT NULL, category TEXT NOT NULL,
            stream_version BIGINT NOT NULL, type TEXT NOT NULL, data JSONB NOT NULL, metadata JSONB NOT NULL,
            recorded_at TIMESTAMPTZ NOT NULL DEFAULT date_trunc('milliseconds', now()),
            CONSTRAINT events_stream_version_key UNIQUE (stream_name, stream_version));
          CREATE TABLE "${schema}".streams (stream_name TEXT PRIMARY KEY, version BIGINT NOT NULL);
          CREATE TABLE "${schema}".checkpoints (name TEXT PRIMARY KEY, position BIGINT NOT NULL);
          CREATE FUNCTION "${schema}".append_events(p_stream text, p_category text, p_expected bigint, p_events jsonb)
            RETURNS TABLE (ok boolean, version bigint, last_position bigint) LANGUAGE sql AS 'SELECT true, 0::bigint, 0::bigint';
          INSERT INTO "${schema}".events (event_id, stream_name, category, stream_version, type, data, metadata, recorded_at) VALUES
            ('e1', 'app-1', 'app', 1, 'AppCreated', '{"name": "x", "list": [1, null]}', '{"actor": "cli"}', '2026-01-01T00:00:00Z'),
            ('e2', 'app-1', 'app', 2, 'AppRenamed', '"text"', '{}', '2026-01-01T00:00:01Z');
          INSERT INTO "${schema}".streams VALUES ('app-1', 2);
          INSERT INTO "${schema}".checkpoints VALUES ('publisher', 1);`);
      });
      const store = open({ schema });
      expect((await store.readAll()).map((e) => [e.id, e.streamVersion, e.data, e.metadata])).toEqual([
        ['e1', 1n, { name: 'x', list: [1, null] }, { actor: 'cli' }],
        ['e2', 2n, 'text', {}],
      ]);
      expect(await store.readCheckpoint('publisher')).toBe(1n);
      await store.appendToStream('app-1', [{ type: 'Odd', data: { s: '\u0000\ud800' } }], { expectedVersion: 2n });
      expect((await store.readStream('app-1')).events.map((e) => e.data)).toEqual([{ name: 'x', list: [1, null] }, 'text', { s: '\u0000\ud800' }]);
      await admin(async (client) => {
        const columns = await client.query(
          `SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
            WHERE a.attrelid = '"${schema}".events'::regclass AND a.attname IN ('data', 'metadata') ORDER BY a.attname`,
        );
        expect(columns.rows).toEqual([
          { attname: 'data', type: 'json' },
          { attname: 'metadata', type: 'json' },
        ]);
        const functions = await client.query(
          `SELECT pg_get_function_identity_arguments(p.oid) AS args FROM pg_proc p
            WHERE p.pronamespace = '"${schema}"'::regnamespace AND p.proname = 'append_events'`,
        );
        expect(functions.rows.map((row: { args: string }) => row.args)).toEqual([
          'p_stream text, p_category text, p_expected bigint, p_ids text[], p_types text[], p_data json[], p_metadata json[], p_recorded_at timestamp with time zone[], p_tag_index integer[], p_tags text[], p_keys json',
        ]);
      });
    });

    it('has the key tables vacuumed as soon as they hold a dead row', async () => {
      const store = open();
      await store.ping();
      const options = await admin(async (client) =>
        (
          await client.query<{ relname: string; reloptions: string[] }>(
            `SELECT relname, reloptions FROM pg_class WHERE relnamespace = '"${schemas.at(-1)!}"'::regnamespace
              AND relname IN ('data_keys', 'data_key_material') ORDER BY relname`,
          )
        ).rows,
      );
      const aggressive = ['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=0', 'autovacuum_vacuum_cost_delay=0'];
      expect(options).toEqual([
        { relname: 'data_key_material', reloptions: aggressive },
        { relname: 'data_keys', reloptions: aggressive },
      ]);
    });

    it('keeps the key material apart from the rows that releases and their folds write', async () => {
      const store = open();
      const wrapped = `wrapped-${randomBytes(12).toString('hex')}`;
      const key = { id: 'k1', scope: 'app-1', subject: 'sendbatch-1', wrapped, uses: 3, expiresAt: new Date(Date.now() + 3_600_000) };
      await store.appendToStream('sendbatch-1', [{ type: 'Sent', data: {} }], { keys: { put: [key] } });
      const s = `"${schemas.at(-1)!}"`;
      const versions = () =>
        admin(async (client) => ({
          material: (await client.query<{ xmin: string }>(`SELECT xmin::text FROM ${s}.data_key_material`)).rows,
          counters: (await client.query<{ xmin: string }>(`SELECT xmin::text FROM ${s}.data_keys`)).rows,
        }));
      const put = await versions();
      await store.keys.release(['k1']);
      await store.appendToStream('sendbatch-1', [{ type: 'Delivered', data: {} }], { keys: { release: ['k1'] } });
      const released = await versions();
      // A release is a row of its own: neither the counters' row nor the material's was written.
      expect(released).toEqual(put);
      const rows = () =>
        admin(async (client) => ({
          counters: (await client.query(`SELECT to_jsonb(k) - 'created_seq' - 'expires_at' AS row FROM ${s}.data_keys k`)).rows,
          releases: (await client.query(`SELECT key_id, uses FROM ${s}.data_key_releases ORDER BY key_id`)).rows,
        }));
      expect(await rows()).toEqual({
        counters: [{ row: { id: 'k1', scope: 'app-1', subject: 'sendbatch-1', uses: 3, uses_left: 3, scope_retired: false } }],
        releases: [
          { key_id: 'k1', uses: 1 },
          { key_id: 'k1', uses: 1 },
        ],
      });
      expect((await store.keys.list(undefined, 10)).map((key) => key.usesLeft)).toEqual([1]);
      // The shredder's look for due keys folds them: the counters' row is written, the material's still not.
      expect(await store.keys.due(new Date(), 10)).toEqual([]);
      const folded = await versions();
      expect(folded.counters).not.toEqual(put.counters);
      expect(folded.material).toEqual(put.material);
      expect(await rows()).toEqual({ counters: [{ row: { id: 'k1', scope: 'app-1', subject: 'sendbatch-1', uses: 3, uses_left: 1, scope_retired: false } }], releases: [] });
      await admin(async (client) => expect((await client.query(`SELECT id, wrapped FROM ${s}.data_key_material`)).rows).toEqual([{ id: 'k1', wrapped }]));
    });

    it('releases of one key by appends in flight together do not wait for each other\'s commit, and a destruction takes the releases with the key', async () => {
      const store = open();
      const expiresAt = new Date(Date.now() + 3_600_000);
      await store.appendToStream('sendbatch-1', [{ type: 'Sent', data: {} }], { keys: { put: [{ id: 'k1', scope: 'app-1', subject: 'sendbatch-1', wrapped: 'w', uses: 3, expiresAt }] } });
      const s = `"${schemas.at(-1)!}"`;
      await admin(async (client) => {
        // A delivery's append that released k1 and has not committed yet (as under a burst of deliveries of one send).
        await client.query('BEGIN');
        await client.query(`SELECT ${s}.apply_key_changes($1::json)`, [JSON.stringify({ release: ['k1'] })]);
        try {
          // Another delivery of the same send: with the key's row updated in place it waited for the commit above.
          const other = store.appendToStream('message-2', [{ type: 'Delivered', data: {} }], { keys: { release: ['k1'], require: ['k1'] } });
          const outcome = await Promise.race([other.then(() => 'appended'), new Promise((resolve) => setTimeout(resolve, 10_000, 'waited'))]);
          expect(outcome).toBe('appended');
        } finally {
          await client.query('COMMIT');
        }
      });
      expect((await store.keys.list(undefined, 10)).map((key) => key.usesLeft)).toEqual([1]);
      await store.appendToStream('sendbatch-1', [{ type: 'KeyDestroyed', data: {} }], { keys: { destroy: ['k1'] } });
      await admin(async (client) => expect((await client.query(`SELECT count(*)::int AS n FROM ${s}.data_key_releases`)).rows).toEqual([{ n: 0 }]));
      await expect(store.appendToStream('message-3', [{ type: 'Delivered', data: {} }], { keys: { require: ['k1'] } })).rejects.toBeInstanceOf(DataKeyGoneError);
    });

    it('serves the same keys through createPostgresKeyVault, on its own, for a store that keeps none (EventStoreDB)', async () => {
      const store = open();
      const schema = schemas.at(-1)!;
      const expiresAt = new Date(Date.now() + 3_600_000);
      await store.appendToStream('a-1', [{ type: 'T', data: 1 }], { keys: { put: [{ id: 'k1', scope: 's', subject: 'x', wrapped: 'w1', uses: 1, expiresAt }] } });
      const vault = createPostgresKeyVault({ connectionString, schema });
      try {
        expect(await vault.get(['k1'], new Date())).toEqual(new Map([['k1', 'w1']]));
        await vault.apply({ put: [{ id: 'k2', scope: 's', subject: 'y', wrapped: 'w2', uses: 2, expiresAt }], release: ['k1'] });
        expect(await vault.missing(['k3', 'k1', 'k2', 'k4'])).toEqual(['k3', 'k4']);
        expect((await vault.due(new Date(), 10)).map((key) => [key.id, key.because])).toEqual([['k1', 'used']]);
        const gone = await vault.apply({ release: ['k2'], destroy: ['k1', 'k3'] }).catch((e: unknown) => e);
        expect(gone).toBeInstanceOf(DataKeyGoneError);
        expect((gone as DataKeyGoneError).keyIds).toEqual(['k3']);
        expect((await store.keys.list(undefined, 10)).map((key) => [key.id, key.usesLeft])).toEqual([
          ['k1', 0],
          ['k2', 2],
        ]);
        await vault.apply({ destroy: ['k1'] });
        expect(await store.keys.get(['k1', 'k2'], new Date())).toEqual(new Map([['k2', 'w2']]));
      } finally {
        await vault.close();
      }
      // On a schema of its own, it creates its tables.
      const own = freshSchema();
      schemas.push(own);
      const alone = createPostgresKeyVault({ connectionString, schema: own });
      try {
        await alone.apply({ put: [{ id: 'k1', scope: 's', subject: 'x', wrapped: 'w1', uses: 1, expiresAt }] });
        expect(await alone.list(undefined, 10)).toEqual([{ id: 'k1', scope: 's', subject: 'x', wrapped: 'w1', uses: 1, usesLeft: 1, expiresAt, scopeRetired: false }]);
      } finally {
        await alone.close();
      }
      await expect(alone.get(['k1'], new Date())).rejects.toBeInstanceOf(EventStoreUnavailableError);
    });

    it('of concurrent appends destroying the same key, exactly one records the destruction', async () => {
      const store = open({ poolSize: 12 });
      const other = open({ schema: schemas.at(-1)! });
      const expiresAt = new Date(Date.now() + 3_600_000);
      await store.appendToStream('a-1', [{ type: 'T', data: 0 }], {
        keys: { put: ['k1', 'k2', 'k3'].map((id) => ({ id, scope: 's', subject: id, wrapped: `w-${id}`, uses: 1, expiresAt })) },
      });
      const settled = await Promise.allSettled(
        Array.from({ length: 12 }, (_, i) =>
          (i % 2 === 0 ? store : other).appendToStream(`shred-${i}`, [{ type: 'KeyDestroyed', data: { i } }], {
            keys: { destroy: i % 3 === 0 ? ['k1', 'k2'] : ['k2', 'k1'], release: ['k3'] },
          }),
        ),
      );
      expect(settled.filter((s) => s.status === 'fulfilled').length).toBe(1);
      for (const s of settled) if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(DataKeyGoneError);
      expect((await store.readAll({ filter: { types: ['KeyDestroyed'] } })).length).toBe(1);
      expect((await store.keys.list(undefined, 10)).map((key) => [key.id, key.usesLeft])).toEqual([['k3', 0]]);
    });

    it('migrates idempotently when several stores start at once on one schema', async () => {
      const schema = freshSchema();
      const stores = Array.from({ length: 5 }, () => open({ schema }));
      await Promise.all(stores.map((store) => store.ping()));
      await stores[0]!.appendToStream('a-1', [{ type: 'T', data: 1 }]);
      for (const store of stores) expect((await store.readStream('a-1')).version).toBe(1n);
    });

    it('keeps bigint positions and checkpoints exact beyond 2^53', async () => {
      const store = open();
      await store.ping();
      const admin = new pg.Client({ connectionString });
      await admin.connect();
      try {
        const schema = schemas.at(-1)!;
        await admin.query(`ALTER TABLE "${schema}".events ALTER COLUMN global_position RESTART WITH 9007199254740993`);
      } finally {
        await admin.end();
      }
      const { lastPosition } = await store.appendToStream('big-1', [{ type: 'T', data: 1 }, { type: 'T', data: 2 }]);
      expect(lastPosition).toBe(9007199254740994n);
      expect((await store.readAll()).map((e) => e.globalPosition)).toEqual([9007199254740993n, 9007199254740994n]);
      expect(await store.headPosition()).toBe(9007199254740994n);
      await store.storeCheckpoint('p', 2n ** 62n + 1n);
      expect(await store.readCheckpoint('p')).toBe(2n ** 62n + 1n);
    });

    it('maps an unreachable server to EventStoreUnavailableError, without crashing', async () => {
      const store = createPostgresEventStore({ connectionString: 'postgres://postgres@127.0.0.1:1/test', connectionTimeoutMs: 500 });
      try {
        await expect(store.ping()).rejects.toBeInstanceOf(EventStoreUnavailableError);
        await expect(store.appendToStream('a-1', [{ type: 'T', data: 1 }])).rejects.toBeInstanceOf(EventStoreUnavailableError);
        await expect(store.readAll()).rejects.toBeInstanceOf(EventStoreUnavailableError);
      } finally {
        await store.close();
      }
    });

    it('reports an append as appended when its answer came after its query timeout (the process frozen meanwhile), once', async () => {
      const store = open({ queryTimeoutMs: 1_000 });
      const schema = schemas.at(-1)!;
      await store.appendToStream('frozen-0', [{ type: 'T', data: 0 }]); // the schema ready
      // Another transaction holds the events table, so the append waits inside PostgreSQL.
      const holder = new pg.Client({ connectionString });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE "${schema}".events IN EXCLUSIVE MODE`);
        const appending = store.appendToStream('frozen-1', [
          { type: 'T', data: 1 },
          { type: 'T', data: 2 },
        ]);
        await vi.waitFor(async () => {
          const rows = await admin((client) => client.query(`SELECT 1 FROM pg_stat_activity WHERE query LIKE '%append_events%' AND wait_event_type = 'Lock'`));
          expect(rows.rowCount).toBe(1);
        }, { timeout: 5_000, interval: 20 });
        // Let it go and, at once, stand still past its timeout, as a SIGSTOPped process does:
        // PostgreSQL commits and answers meanwhile, and once this thread runs again the
        // timeout's timer fires before the answer is read.
        await holder.query('COMMIT');
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1_500);
        const appended = await appending;
        const { events } = await store.readStream('frozen-1');
        expect(events.map((event) => event.data)).toEqual([1, 2]);
        expect(appended).toEqual({ nextVersion: events[1]!.streamVersion, lastPosition: events[1]!.globalPosition });
      } finally {
        await holder.end();
      }
    });

    it('of many concurrent appends with the same expected version, exactly one wins', async () => {
      const store = open({ poolSize: 20 });
      const other = open({ schema: schemas.at(-1)! });
      await store.appendToStream('a-1', [{ type: 'T', data: 0 }]);
      const settled = await Promise.allSettled(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? store : other).appendToStream('a-1', [{ type: 'T', data: i + 1 }], { expectedVersion: 1n }),
        ),
      );
      expect(settled.filter((s) => s.status === 'fulfilled').length).toBe(1);
      for (const s of settled) {
        if (s.status === 'rejected') expect(s.reason).toBeInstanceOf(ExpectedVersionConflictError);
      }
    });

    it('never skips an event committed late by a concurrent transaction', async () => {
      const writers = 8;
      const perWriter = 200;
      const store = open({ poolSize: writers + 4 });
      const schema = schemas.at(-1)!;
      await store.ping();
      const seen: RecordedEvent[] = [];
      const subscription = store.subscribe({ after: 0n, handler: (events) => void seen.push(...events) });

      // A raw client allocates a position (following the append protocol: position lock, xid,
      // insert, unlock) and commits only 500 ms later, while the writers below commit higher ones.
      const raw = new pg.Client({ connectionString });
      await raw.connect();
      try {
        await raw.query('BEGIN');
        await raw.query('SELECT pg_advisory_lock($1, hashtext($2))', [POSITION_LOCK_CLASS, schema]);
        await raw.query('SELECT pg_current_xact_id()');
        const inserted = await raw.query<{ global_position: string }>(
          `INSERT INTO "${schema}".events (event_id, stream_name, category, stream_version, type, data, metadata)
           VALUES ('late-1', 'late-1', 'late', 1, 'Late', '{"late":true}', '{}') RETURNING global_position`,
        );
        await raw.query('SELECT pg_advisory_unlock($1, hashtext($2))', [POSITION_LOCK_CLASS, schema]);
        await raw.query(`INSERT INTO "${schema}".streams (stream_name, version) VALUES ('late-1', 1)`);
        const latePosition = BigInt(inserted.rows[0]!.global_position);
        let deliveredWhileOpen: RecordedEvent[] = [];
        let committedAboveWhileOpen = 0;
        const lateCommit = sleep(500).then(async () => {
          deliveredWhileOpen = [...seen];
          const committed = await store.readStream('writer-0');
          committedAboveWhileOpen = committed.events.filter((e) => e.globalPosition > latePosition).length;
          await raw.query('COMMIT');
        });

        await Promise.all(
          Array.from({ length: writers }, async (_, w) => {
            for (let i = 0; i < perWriter; i++) {
              await store.appendToStream(`writer-${w}`, [{ type: 'Written', data: { w, i } }], { expectedVersion: BigInt(i) });
            }
          }),
        );
        await lateCommit;
        // Higher positions did commit while the late transaction was open, yet none was delivered.
        expect(committedAboveWhileOpen).toBeGreaterThan(0);
        expect(deliveredWhileOpen.filter((e) => e.globalPosition > latePosition)).toEqual([]);
      } finally {
        await raw.end();
      }

      await subscription.catchUp();
      const total = writers * perWriter + 1;
      await vi.waitFor(() => expect(seen.length).toBe(total), { timeout: 10_000, interval: 10 });
      expect(new Set(seen.map((e) => e.id)).size).toBe(total);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.globalPosition > seen[i - 1]!.globalPosition).toBe(true);
      expect(seen.map((e) => e.globalPosition)).toEqual((await store.readAll({ limit: 10_000 })).map((e) => e.globalPosition));
      for (let w = 0; w < writers; w++) {
        const mine = seen.filter((e) => e.streamName === `writer-${w}`).map((e) => (e.data as { i: number }).i);
        expect(mine).toEqual(Array.from({ length: perWriter }, (_, i) => i));
      }
    });
  });
}
