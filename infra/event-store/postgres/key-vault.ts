import pg from 'pg';
import {
  checkKeyChanges,
  MAX_KEY_CHANGES,
  releasedUses,
  retiredBecause,
  validKeyIds,
  validLimit,
  validStoredKey,
  type CheckedKeyChanges,
  type StandaloneKeyVault,
} from '../data-keys.ts';
import { DataKeyGoneError, EventStoreUnavailableError, type KeyVault, type StoredDataKey } from '../port.ts';
import { validDate } from '../validation.ts';
import { isUniqueViolation, toStoreError } from './errors.ts';
import { quoteSchema } from './identifiers.ts';
import { migrateUnderLock } from './migration.ts';
import { keysSchemaSql } from './schema.ts';

/** Runs one statement once the schema is ready, with the store's error mapping. */
export type Query = <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<R[]>;

/** The KeyChanges as the JSON `apply_key_changes` takes (dates as ISO text). */
export const keyChangesJson = (changes: CheckedKeyChanges): string =>
  JSON.stringify({
    put: changes.put.map((key) => ({
      id: key.id,
      scope: key.scope,
      subject: key.subject,
      wrapped: key.wrapped,
      uses: key.uses,
      expiresAt: key.expiresAt.toISOString(),
    })),
    require: changes.require,
    release: changes.release,
    retireScopes: changes.retireScopes,
    destroy: changes.destroy,
  });

/** A put of a key whose id exists (the primary key of data_keys or data_key_material). */
export const isDuplicateKey = (error: unknown): boolean =>
  isUniqueViolation(error, 'data_keys_pkey') || isUniqueViolation(error, 'data_key_material_pkey');

const keySql = (schema: string) => {
  const s = quoteSchema(schema);
  const usesLeft = `greatest(k.uses_left - coalesce((SELECT sum(r.uses) FROM ${s}.data_key_releases r WHERE r.key_id = k.id), 0), 0)::integer AS uses_left`;
  const columns = `k.id, k.scope, k.subject, m.wrapped, k.uses, ${usesLeft}, k.expires_at, k.scope_retired`;
  return {
    apply: `SELECT ${s}.apply_key_changes($1::json) AS gone`,
    get: `SELECT k.id, m.wrapped FROM ${s}.data_keys k JOIN ${s}.data_key_material m ON m.id = k.id
           WHERE k.id = ANY($1::text[]) AND k.expires_at > $2 AND NOT k.scope_retired`,
    fold: `SELECT ${s}.fold_key_releases()`,
    due: `SELECT k.id, k.scope, k.subject, k.scope_retired, k.expires_at, k.uses_left FROM ${s}.data_keys k
           WHERE k.scope_retired OR k.expires_at <= $1 OR k.uses_left <= 0
           ORDER BY k.created_seq LIMIT $2`,
    list: `SELECT ${columns} FROM ${s}.data_keys k JOIN ${s}.data_key_material m ON m.id = k.id
            WHERE k.id > $1 ORDER BY k.id LIMIT $2`,
    import: `WITH input AS (
               SELECT * FROM json_to_recordset($1::json)
                 AS p(id text, scope text, subject text, wrapped text, uses integer, "usesLeft" integer, "expiresAt" timestamptz, "scopeRetired" boolean)
             ), inserted AS (
               INSERT INTO ${s}.data_keys (id, scope, subject, uses, uses_left, expires_at, scope_retired)
               SELECT p.id, p.scope, p.subject, p.uses, p."usesLeft", p."expiresAt", p."scopeRetired" FROM input p
               ON CONFLICT (id) DO NOTHING
               RETURNING id
             )
             INSERT INTO ${s}.data_key_material (id, wrapped)
             SELECT i.id, p.wrapped FROM inserted i JOIN input p ON p.id = i.id`,
    missing: `SELECT d.id FROM unnest($1::text[]) WITH ORDINALITY AS d(id, n)
               WHERE NOT EXISTS (SELECT 1 FROM ${s}.data_keys k WHERE k.id = d.id) ORDER BY d.n`,
  } as const;
};

interface KeyRow {
  id: string;
  scope: string;
  subject: string;
  wrapped: string;
  uses: number;
  uses_left: number;
  expires_at: Date;
  scope_retired: boolean;
}

/** The data keys of a PostgreSQL schema, through `query` (the event store's, or a vault's own pool). */
export const createPostgresKeys = (query: Query, schema: string): Omit<StandaloneKeyVault, 'close'> => {
  const sql = keySql(schema);

  const apply = async (changes: CheckedKeyChanges): Promise<void> => {
    let rows: { gone: string[] | null }[];
    try {
      rows = await query<{ gone: string[] | null }>(sql.apply, [keyChangesJson(changes)]);
    } catch (error) {
      if (isDuplicateKey(error)) throw new Error('A data key with the same id already exists', { cause: error });
      throw error;
    }
    const gone = rows[0]?.gone;
    if (gone != null) throw new DataKeyGoneError(gone);
  };

  const vault: KeyVault & Pick<StandaloneKeyVault, 'apply' | 'missing'> = {
    async get(ids, now) {
      validKeyIds(ids, 'get');
      validDate(now, 'now');
      if (ids.length === 0) return new Map();
      const rows = await query<{ id: string; wrapped: string }>(sql.get, [[...ids], now]);
      return new Map(rows.map((row) => [row.id, row.wrapped]));
    },
    async release(releases) {
      const uses = releasedUses(releases, 'release');
      if (uses.length === 0) return;
      await apply({ put: [], require: [], release: uses, retireScopes: [], destroy: [] });
    },
    async due(now, limit) {
      validDate(now, 'now');
      validLimit(limit);
      // The releases counted first, so that a key used up is found by its index (data_keys_used).
      await query(sql.fold, []);
      const rows = await query<Omit<KeyRow, 'wrapped' | 'uses'>>(sql.due, [now, limit]);
      return rows.map((row) => ({
        id: row.id,
        scope: row.scope,
        subject: row.subject,
        because: retiredBecause({ scopeRetired: row.scope_retired, expiresAtMs: row.expires_at.getTime(), usesLeft: row.uses_left }, now.getTime())!,
      }));
    },
    async list(afterId, limit) {
      validLimit(limit);
      return (await query<KeyRow>(sql.list, [afterId ?? '', limit])).map(toStoredKey);
    },
    async import(keys) {
      if (keys.length > MAX_KEY_CHANGES) throw new RangeError(`import takes at most ${MAX_KEY_CHANGES} keys, got ${keys.length}`);
      keys.forEach(validStoredKey);
      if (keys.length === 0) return;
      const input = keys.map((key) => ({ ...key, expiresAt: key.expiresAt.toISOString() }));
      await query(sql.import, [JSON.stringify(input)]);
    },
    async apply(changes) {
      const checked = checkKeyChanges(changes);
      if (checked !== undefined) await apply(checked);
    },
    async missing(ids) {
      validKeyIds(ids, 'missing');
      if (ids.length === 0) return [];
      return (await query<{ id: string }>(sql.missing, [[...ids]])).map((row) => row.id);
    },
  };
  return vault;
};

const toStoredKey = (row: KeyRow): StoredDataKey => ({
  id: row.id,
  scope: row.scope,
  subject: row.subject,
  wrapped: row.wrapped,
  uses: row.uses,
  usesLeft: row.uses_left,
  expiresAt: row.expires_at,
  scopeRetired: row.scope_retired,
});

export interface PostgresKeyVaultOptions {
  readonly connectionString: string;
  /** Schema of the tables (created if missing), the same tables as the event store's. Default 'relay'. */
  readonly schema?: string;
  /** Maximum number of pooled connections. Default 4. */
  readonly poolSize?: number;
  /** How long to wait for a connection before failing with EventStoreUnavailableError. Default 5000. */
  readonly connectionTimeoutMs?: number;
}

/**
 * The PostgreSQL key vault on its own: the tables `data_keys` and `data_key_material` of a schema
 * (those of the PostgreSQL event store), for a store that cannot keep keys itself (EventStoreDB).
 * Each `apply` is one transaction (one statement). Failures to reach the server reject with
 * EventStoreUnavailableError. The tables are created at the first use, under the migration lock.
 */
export function createPostgresKeyVault(options: PostgresKeyVaultOptions): StandaloneKeyVault {
  const schema = options.schema ?? 'relay';
  quoteSchema(schema);
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize ?? 4,
    connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000,
  });
  // An idle client losing its connection emits 'error' on the pool: without a listener that would crash the process.
  pool.on('error', () => undefined);
  let closed = false;
  let migration: Promise<void> | undefined;
  const ready = (): Promise<void> => {
    migration ??= migrateUnderLock(pool, schema, keysSchemaSql(schema)).catch((error: unknown) => {
      migration = undefined;
      throw error;
    });
    return migration;
  };
  const query: Query = async <R extends pg.QueryResultRow>(text: string, values?: unknown[]) => {
    if (closed) throw new EventStoreUnavailableError('The PostgreSQL key vault is closed');
    try {
      await ready();
      return (await pool.query<R>(text, values)).rows;
    } catch (error) {
      throw toStoreError(error);
    }
  };
  const keys = createPostgresKeys(query, schema);
  let closing: Promise<void> | undefined;
  return {
    ...keys,
    close() {
      closing ??= (async () => {
        closed = true;
        await migration?.catch(() => undefined);
        await pool.end();
      })();
      return closing;
    },
  };
}
