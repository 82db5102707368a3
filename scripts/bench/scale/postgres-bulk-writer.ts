/**
 * The scale bench's writer for PostgreSQL: the same rows `append_events` writes
 * (infra/event-store/postgres/append-function.ts), many appends to one transaction.
 *
 * Why: the bench's population writes ~10 M events; one call of `append_events` per append costs
 * PostgreSQL ~1.5 ms of CPU here (a PL/pgSQL function of a dozen statements, each planned and
 * executed on its own): ~900 events a second with both cores busy, over three hours for the full
 * size. This writer takes every append asked while its connections were busy and writes them as one
 * transaction, set by set: the events in one INSERT under the position lock (the store's protocol
 * for writers that bypass `append_events`: lock, take the transaction id, insert, unlock, before any
 * other write), their tags, the streams' versions, and the key changes in `apply_key_changes`'
 * order (put, release, destroy). Two connections: one transaction is built while the other is
 * written. Each caller's promise settles with its transaction. ~5,000 events a second here.
 *
 * It writes only what the bench asks: exact expected versions (the bench made every stream it
 * appends to), puts, releases and destroys; a `require`, a `retireScopes` or another expected
 * version throws. A stream appended to twice in one transaction, or a version taken, fails the
 * transaction on the store's unique constraint; a destroy of a key that is not there fails it too:
 * the bench's fault, never smoothed over. Reads (the head) go to the store it was made from.
 */
import pg from 'pg';
import { categoryOf, newEventId, type AppendOptions, type EventStore, type KeyRelease, type NewEvent } from '../../../infra/event-store/port.ts';
import { checkKeyChanges, releasedUses, type CheckedKeyChanges } from '../../../infra/event-store/data-keys.ts';
import { tagsOf } from '../../../infra/event-store/tags.ts';
import { literal, POSITION_LOCK_CLASS, quoteSchema } from '../../../infra/event-store/postgres/identifiers.ts';
import { relayTagger } from '../../../apps/boot/stores.ts';
import type { Writable } from './writer.ts';

interface Pending extends Pick<CheckedKeyChanges, 'put' | 'release' | 'destroy'> {
  readonly stream: string;
  readonly events: readonly NewEvent[];
  readonly from: bigint;
  readonly settle: { resolve: (value: { nextVersion: bigint; lastPosition: bigint }) => void; reject: (error: unknown) => void };
}

/** Most appends in one transaction: a flush's arrays stay a few megabytes. */
const MAX_APPENDS_PER_FLUSH = 2000;
/** Transactions in flight: one is built while the other is written (they share only the position lock). */
const CONNECTIONS = 2;

const transactionSql = (schema: string) => {
  const s = quoteSchema(schema);
  const lock = `${POSITION_LOCK_CLASS}, hashtext(${literal(schema)})`;
  return {
    lock: `SELECT pg_advisory_lock(${lock}), pg_current_xact_id()`,
    unlock: `SELECT pg_advisory_unlock(${lock})`,
    events: `INSERT INTO ${s}.events (event_id, stream_name, category, stream_version, type, data, metadata, recorded_at)
             SELECT x.id, x.stream, x.category, x.version, x.type, x.data, x.metadata, coalesce(x.recorded_at, date_trunc('milliseconds', now()))
               FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::text[], $6::json[], $7::json[], $8::timestamptz[])
                    WITH ORDINALITY AS x(id, stream, category, version, type, data, metadata, recorded_at, n)
              ORDER BY x.n
             RETURNING global_position, event_id`,
    tags: `INSERT INTO ${s}.event_tags (tag, global_position) SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING`,
    streams: `INSERT INTO ${s}.streams AS st (stream_name, version) SELECT * FROM unnest($1::text[], $2::bigint[])
              ON CONFLICT (stream_name) DO UPDATE SET version = excluded.version`,
    putKeys: `INSERT INTO ${s}.data_keys (id, scope, subject, uses, uses_left, expires_at)
              SELECT k.id, k.scope, k.subject, k.uses, k.uses, k.expires_at
                FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[]) AS k(id, scope, subject, uses, expires_at)`,
    putMaterial: `INSERT INTO ${s}.data_key_material (id, wrapped) SELECT * FROM unnest($1::text[], $2::text[])`,
    release: `INSERT INTO ${s}.data_key_releases (key_id, uses)
              SELECT r.id, r.uses FROM unnest($1::text[], $2::int[]) AS r(id, uses)
               WHERE EXISTS (SELECT 1 FROM ${s}.data_keys k WHERE k.id = r.id)`,
    destroyMaterial: `DELETE FROM ${s}.data_key_material m WHERE m.id = ANY ($1::text[])`,
    destroyKeys: `DELETE FROM ${s}.data_keys k WHERE k.id = ANY ($1::text[])`,
  } as const;
};

export interface PostgresBulkWriter extends Writable {
  /** Writes what is pending and closes its connections (the store stays open). */
  close(): Promise<void>;
}

export const createPostgresBulkWriter = async (store: EventStore, connectionString: string, schema: string): Promise<PostgresBulkWriter> => {
  await store.headPosition(); // the schema is migrated before the first write
  const clients = await Promise.all(
    Array.from({ length: CONNECTIONS }, async () => {
      const client = new pg.Client({ connectionString });
      await client.connect();
      return client;
    }),
  );
  const idle = [...clients];
  const running = new Set<Promise<void>>();
  const sql = transactionSql(schema);
  let pending: Pending[] = [];
  let scheduled = false;

  const write = async (client: pg.Client, batch: readonly Pending[]): Promise<Array<{ nextVersion: bigint; lastPosition: bigint }>> => {
    const ids: string[] = [];
    const streams: string[] = [];
    const categories: string[] = [];
    const versions: string[] = [];
    const types: string[] = [];
    const data: string[] = [];
    const metadata: string[] = [];
    const recordedAt: Array<string | null> = [];
    const tagsByEvent = new Map<string, readonly string[]>();
    /** Each append's last event id (what its settled position is read by). */
    const lastIds: Array<string | undefined> = [];
    for (const append of batch) {
      append.events.forEach((event, i) => {
        const id = event.id ?? newEventId();
        ids.push(id);
        streams.push(append.stream);
        categories.push(categoryOf(append.stream));
        versions.push(String(append.from + BigInt(i + 1)));
        types.push(event.type);
        data.push(JSON.stringify(event.data ?? null));
        metadata.push(JSON.stringify(event.metadata ?? {}));
        recordedAt.push(event.recordedAt === undefined ? null : new Date(event.recordedAt).toISOString());
        const tags = tagsOf(relayTagger, { streamName: append.stream, type: event.type, data: event.data ?? null });
        if (tags.length > 0) tagsByEvent.set(id, tags);
      });
      lastIds.push(append.events.length > 0 ? ids.at(-1) : undefined);
    }
    const put = batch.flatMap((a) => a.put);
    const release = batch.flatMap((a) => a.release);
    const destroy = batch.flatMap((a) => a.destroy);
    let locked = false;
    await client.query('BEGIN');
    try {
      const positions = new Map<string, bigint>();
      if (ids.length > 0) {
        await client.query(sql.lock);
        locked = true;
        const inserted = await client.query<{ global_position: string; event_id: string }>(sql.events, [ids, streams, categories, versions, types, data, metadata, recordedAt]);
        for (const row of inserted.rows) positions.set(row.event_id, BigInt(row.global_position));
        await client.query(sql.unlock);
        locked = false;
        const tagNames: string[] = [];
        const tagPositions: string[] = [];
        for (const [id, tags] of tagsByEvent) for (const tag of tags) tagNames.push(tag), tagPositions.push(String(positions.get(id)));
        if (tagNames.length > 0) await client.query(sql.tags, [tagNames, tagPositions]);
        const last = new Map<string, bigint>();
        for (const append of batch) if (append.events.length > 0) last.set(append.stream, append.from + BigInt(append.events.length));
        await client.query(sql.streams, [[...last.keys()], [...last.values()].map(String)]);
      }
      if (put.length > 0) {
        await client.query(sql.putKeys, [put.map((k) => k.id), put.map((k) => k.scope), put.map((k) => k.subject), put.map((k) => k.uses), put.map((k) => k.expiresAt.toISOString())]);
        await client.query(sql.putMaterial, [put.map((k) => k.id), put.map((k) => k.wrapped)]);
      }
      if (release.length > 0) await client.query(sql.release, [release.map((r) => r.id), release.map((r) => r.uses)]);
      if (destroy.length > 0) {
        await client.query(sql.destroyMaterial, [destroy]);
        const gone = await client.query(sql.destroyKeys, [destroy]);
        if (gone.rowCount !== new Set(destroy).size) throw new Error(`bulk writer: ${destroy.length - (gone.rowCount ?? 0)} of ${destroy.length} keys to destroy were not there`);
      }
      await client.query('COMMIT');
      return batch.map((append, i) => ({ nextVersion: append.from + BigInt(append.events.length), lastPosition: positions.get(lastIds[i] ?? '') ?? 0n }));
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      // The position lock is the session's: a rollback keeps it.
      if (locked) await client.query(sql.unlock).catch(() => undefined);
      throw error;
    }
  };

  /** Starts a transaction on every idle connection while appends wait. */
  const drain = () => {
    while (pending.length > 0 && idle.length > 0) {
      const client = idle.pop()!;
      const batch = pending.slice(0, MAX_APPENDS_PER_FLUSH);
      pending = pending.slice(batch.length);
      const task: Promise<void> = write(client, batch)
        .then(
          (results) => batch.forEach((append, i) => append.settle.resolve(results[i]!)),
          (error: unknown) => batch.forEach((append) => append.settle.reject(error)),
        )
        .finally(() => {
          idle.push(client);
          running.delete(task);
          if (pending.length > 0) schedule();
        });
      running.add(task);
    }
  };

  /** Appends asked in the same turn, or while the connections are busy, go together. */
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      drain();
    });
  };

  const settled = async () => {
    while (pending.length > 0 || running.size > 0) {
      drain();
      await Promise.all(running);
    }
  };

  const enqueue = (entry: Omit<Pending, 'settle'>) =>
    new Promise<{ nextVersion: bigint; lastPosition: bigint }>((resolve, reject) => {
      pending.push({ ...entry, settle: { resolve, reject } });
      schedule();
    });

  return {
    appendToStream(stream: string, events: readonly NewEvent[], options?: AppendOptions) {
      const expected = options?.expectedVersion;
      if (typeof expected !== 'bigint') return Promise.reject(new Error(`bulk writer: ${stream}: only exact expected versions (got ${String(expected)})`));
      const keys = checkKeyChanges(options?.keys);
      if (keys !== undefined && (keys.require.length > 0 || keys.retireScopes.length > 0)) return Promise.reject(new Error(`bulk writer: ${stream}: require and retireScopes are not written in bulk`));
      return enqueue({ stream, events, from: expected, put: keys?.put ?? [], release: keys?.release ?? [], destroy: keys?.destroy ?? [] });
    },
    async headPosition() {
      await settled();
      return store.headPosition();
    },
    keys: {
      async release(list: readonly KeyRelease[]) {
        await enqueue({ stream: '', events: [], from: 0n, put: [], release: releasedUses(list, 'release'), destroy: [] });
      },
    },
    async close() {
      await settled();
      await Promise.all(clients.map((client) => client.end()));
    },
  };
};
