/**
 * The scale bench's bulk writer writes what `append_events` writes: the same appends through the
 * store (one call each) and through the writer (many to a transaction) leave the same rows.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { relayTagger } from '../../../apps/boot/stores.ts';
import { createPostgresEventStore } from '../../../infra/event-store/postgres/postgres-event-store.ts';
import type { AppendOptions, EventStore, NewEvent } from '../../../infra/event-store/port.ts';
import { dropSchema, noPostgres, POSTGRES_URL, postgresUnreachable } from '../../../test/support/postgres-server.ts';
import { createPostgresBulkWriter } from './postgres-bulk-writer.ts';

const reason = await postgresUnreachable();

const expiresAt = new Date('2030-01-01T00:00:00.000Z');
const at = (s: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, s));

/** Appends as the bench makes them: a batch sealed under a key, its deliveries releasing it, the shredder destroying it. */
const script = (n: number): Array<{ stream: string; events: NewEvent[]; options: AppendOptions } | { release: string[] }> => {
  const key = `key-${n}`;
  const inboundKey = `key-in-${n}`;
  return [
    {
      stream: `sendbatch-b${n}`,
      events: [{ id: `e-${n}-1`, type: 'MessagesAccepted', data: { batchId: `b${n}`, appId: `app-${n % 3}`, messages: [{ messageId: `m${n}`, appId: `app-${n % 3}` }] }, metadata: { actor: 'credential:c', correlationId: `b${n}` }, recordedAt: at(n) }],
      options: { expectedVersion: 0n, keys: { put: [{ id: key, scope: `app-${n % 3}`, subject: `sendbatch-b${n}`, wrapped: `w-${n}`, uses: 2, expiresAt }] } },
    },
    {
      stream: `outbound-m${n}`,
      events: [
        { id: `e-${n}-2`, type: 'DeliveryAttemptFailed', data: { messageId: `m${n}`, appId: `app-${n % 3}`, attempt: 1, text: 'quote " and \\ and ü' }, metadata: { actor: 'system:delivery' }, recordedAt: at(n + 1) },
        { id: `e-${n}-3`, type: 'MessageDelivered', data: { messageId: `m${n}`, appId: `app-${n % 3}` }, metadata: { actor: 'system:delivery' }, recordedAt: at(n + 2) },
      ],
      options: { expectedVersion: 0n, keys: { release: [key] } },
    },
    {
      stream: `inbound-i${n}`,
      events: [{ id: `e-${n}-4`, type: 'InboundMessageReceived', data: { messageId: `i${n}`, appId: `app-${n % 3}` }, metadata: { actor: 'system:gateway' }, recordedAt: at(n + 3) }],
      options: { expectedVersion: 0n, keys: { put: [{ id: inboundKey, scope: `app-${n % 3}`, subject: `inbound-i${n}`, wrapped: `wi-${n}`, uses: 1, expiresAt }] } },
    },
    { release: [inboundKey] },
    {
      stream: `shred-s${n}`,
      events: [{ id: `e-${n}-5`, type: 'BodiesForgotten', data: { shredId: `s${n}` }, metadata: { actor: 'system:shredder' }, recordedAt: at(n + 4) }],
      options: { expectedVersion: 0n, keys: { destroy: n % 2 === 0 ? [key] : [inboundKey] } },
    },
  ];
};

/** Each of `units` runs its script in order; the units run side by side (as the bench's pool does). */
const run = async (target: Pick<EventStore, 'appendToStream'> & { keys: Pick<EventStore['keys'], 'release'> }, units: number) => {
  await Promise.all(
    Array.from({ length: units }, async (_, n) => {
      for (const step of script(n)) {
        if ('release' in step) await target.keys.release(step.release);
        else await target.appendToStream(step.stream, step.events, step.options);
      }
    }),
  );
};

/** The rows of a schema, in an order that does not depend on which transaction wrote first. */
const rowsOf = async (client: pg.Client, schema: string) => {
  const s = `"${schema}"`;
  const q = async (text: string) => (await client.query(text)).rows;
  return {
    events: await q(`SELECT event_id, stream_name, category, stream_version, type, data::text AS data, metadata::text AS metadata, recorded_at FROM ${s}.events ORDER BY event_id`),
    tags: await q(`SELECT t.tag, e.event_id FROM ${s}.event_tags t JOIN ${s}.events e USING (global_position) ORDER BY 1, 2`),
    streams: await q(`SELECT stream_name, version FROM ${s}.streams ORDER BY 1`),
    keys: await q(`SELECT id, scope, subject, uses, uses_left, expires_at, scope_retired FROM ${s}.data_keys ORDER BY id`),
    material: await q(`SELECT id, wrapped FROM ${s}.data_key_material ORDER BY id`),
    releases: await q(`SELECT key_id, sum(uses)::int AS uses FROM ${s}.data_key_releases GROUP BY 1 ORDER BY 1`),
    // Positions follow each stream's versions (the order of its appends).
    inOrder: await q(`SELECT count(*)::int AS n FROM ${s}.events a JOIN ${s}.events b ON a.stream_name = b.stream_name AND a.stream_version < b.stream_version WHERE a.global_position > b.global_position`),
  };
};

if (reason !== undefined) {
  noPostgres('the scale bench bulk writer', reason);
} else {
  describe('the scale bench PostgreSQL bulk writer', () => {
    const schemas: string[] = [];
    const closers: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of closers.splice(0).reverse()) await close();
      for (const schema of schemas.splice(0)) await dropSchema(schema);
    });
    const open = (schema: string) => {
      schemas.push(schema);
      const store = createPostgresEventStore({ connectionString: POSTGRES_URL, schema, tagger: relayTagger });
      closers.push(() => store.close());
      return store;
    };

    it('leaves the rows append_events leaves, and settles each append with its version and position', async () => {
      const name = `relay_test_${randomBytes(5).toString('hex')}`;
      const byStore = open(`${name}_a`);
      const byWriter = open(`${name}_b`);
      const writer = await createPostgresBulkWriter(byWriter, POSTGRES_URL, `${name}_b`);
      closers.push(() => writer.close());

      await run(byStore, 40);
      await run(writer, 40);
      const first = await writer.appendToStream('sendbatch-late', [{ type: 'T', data: {} }, { type: 'U', data: {} }], { expectedVersion: 0n });
      expect(first.nextVersion).toBe(2n);
      expect(await writer.headPosition()).toBe(first.lastPosition);
      expect(first.lastPosition).toBe(40n * 5n + 2n);

      const client = new pg.Client({ connectionString: POSTGRES_URL });
      await client.connect();
      try {
        const a = await rowsOf(client, `${name}_a`);
        const b = await rowsOf(client, `${name}_b`);
        expect(a.events).toHaveLength(200);
        expect(a.keys).toHaveLength(40);
        expect(a.releases.length).toBeGreaterThan(0);
        expect(a.tags.length).toBeGreaterThan(0);
        expect(b.events.filter((e) => e.stream_name !== 'sendbatch-late')).toEqual(a.events);
        expect(b.tags.filter((t) => t.event_id.startsWith('e-'))).toEqual(a.tags);
        expect(b.streams.filter((s) => s.stream_name !== 'sendbatch-late')).toEqual(a.streams);
        expect(b.keys).toEqual(a.keys);
        expect(b.material).toEqual(a.material);
        expect(b.releases).toEqual(a.releases);
        expect(b.inOrder).toEqual([{ n: 0 }]);
      } finally {
        await client.end();
      }
    });

    it('fails an append the store would refuse: a version taken, a key to destroy that is not there', async () => {
      const schema = `relay_test_${randomBytes(5).toString('hex')}`;
      const store = open(schema);
      const writer = await createPostgresBulkWriter(store, POSTGRES_URL, schema);
      closers.push(() => writer.close());
      await writer.appendToStream('thing-1', [{ type: 'Made', data: {} }], { expectedVersion: 0n });
      await expect(writer.appendToStream('thing-1', [{ type: 'Made', data: {} }], { expectedVersion: 0n })).rejects.toThrow(/events_stream_version_key/);
      await expect(writer.appendToStream('shred-1', [{ type: 'BodiesForgotten', data: {} }], { expectedVersion: 0n, keys: { destroy: ['nowhere'] } })).rejects.toThrow('bulk writer: 1 of 1 keys to destroy were not there');
      await expect(writer.appendToStream('thing-2', [{ type: 'Made', data: {} }], { expectedVersion: 'any' })).rejects.toThrow('bulk writer: thing-2: only exact expected versions (got any)');
      expect((await store.readStream('thing-1')).version).toBe(1n);
      expect((await store.readStream('shred-1')).version).toBe(0n);
    });
  });
}
