import pg from 'pg';
import { sqlStateOf } from '../../event-store/postgres/errors.ts';
import { quoteSchema } from '../../event-store/postgres/identifiers.ts';
import { migrateUnderLock } from '../../event-store/postgres/migration.ts';
import { LimitStoreUnavailableError, type LimitLease, type LimitStore } from '../port.ts';

/**
 * The rate-limit windows in PostgreSQL (`<schema>.rate_windows`, beside the event store's tables):
 * every instance of a deployment on the same database shares them. A lease is one statement: the
 * window's row is locked, opened again when it ended, and charged at most up to the limit; what
 * it handed out is the difference it made. Rows of ended windows are deleted by `evict`.
 */
export interface PostgresLimitStoreOptions {
  readonly connectionString: string;
  readonly schema?: string;
  readonly poolSize?: number;
  readonly connectionTimeoutMs?: number;
}

const ddl = (s: string) => `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.rate_windows (
  key text PRIMARY KEY,
  window_start bigint NOT NULL,
  window_ms integer NOT NULL,
  granted integer NOT NULL CHECK (granted >= 0)
);`;

const leaseSql = (s: string) => `
UPDATE ${s}.rate_windows r SET
  window_start = CASE WHEN o.window_start + o.window_ms <= $4 THEN $4 ELSE o.window_start END,
  window_ms = CASE WHEN o.window_start + o.window_ms <= $4 THEN $5 ELSE o.window_ms END,
  granted = CASE
    WHEN o.window_start + o.window_ms <= $4 THEN LEAST($2::integer, $3::integer)
    ELSE GREATEST(o.granted, LEAST(o.granted + $2::integer, $3::integer)) END
FROM (SELECT key, window_start, window_ms, granted FROM ${s}.rate_windows WHERE key = $1 FOR UPDATE) o
WHERE r.key = o.key
RETURNING r.window_start::text AS start, r.window_ms AS ms, r.granted AS total,
  CASE WHEN o.window_start + o.window_ms <= $4 THEN 0 ELSE o.granted END AS before`;

type LeaseRow = { start: string; ms: number; total: number; before: number };

export class PostgresLimitStore implements LimitStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly schemaName: string;
  private readonly sql: { lease: string; insert: string; giveBack: string; evict: string };
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(options: PostgresLimitStoreOptions) {
    this.schemaName = options.schema ?? 'relay';
    this.schema = quoteSchema(this.schemaName);
    const s = this.schema;
    this.sql = {
      lease: leaseSql(s),
      insert: `INSERT INTO ${s}.rate_windows (key, window_start, window_ms, granted) VALUES ($1, $2, $3, 0) ON CONFLICT (key) DO NOTHING`,
      giveBack: `UPDATE ${s}.rate_windows SET granted = GREATEST(0, granted - $3::integer) WHERE key = $1 AND window_start = $2`,
      evict: `DELETE FROM ${s}.rate_windows WHERE window_start + window_ms <= $1`,
    };
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: options.poolSize ?? 4, connectionTimeoutMillis: options.connectionTimeoutMs ?? 5000 });
    this.pool.on('error', () => undefined); // an idle client's lost connection: the next query gets a new one
  }

  async lease(key: string, want: number, limit: number, windowMs: number, now: number): Promise<LimitLease> {
    const args = [key, Math.max(0, Math.floor(want)), Math.max(0, Math.floor(limit)), Math.floor(now), Math.floor(windowMs)];
    let rows = await this.query<LeaseRow>(this.sql.lease, args);
    if (rows.length === 0) {
      // The key's first window: its row, then the same lease (another instance may have made the row meanwhile).
      await this.query(this.sql.insert, [key, Math.floor(now), Math.floor(windowMs)]);
      rows = await this.query<LeaseRow>(this.sql.lease, args);
    }
    const row = rows[0];
    if (!row) throw new LimitStoreUnavailableError('The rate-limit window could not be read');
    const windowStart = Number(row.start);
    return { granted: row.total - row.before, grantedTotal: row.total, windowStart, resetAt: windowStart + row.ms };
  }

  async giveBack(key: string, windowStart: number, units: number): Promise<void> {
    if (units <= 0) return;
    await this.query(this.sql.giveBack, [key, windowStart, Math.floor(units)]);
  }

  async evict(now: number): Promise<number> {
    const result = await this.run(() => this.pool.query(this.sql.evict, [Math.floor(now)]));
    return result.rowCount ?? 0;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.run(() => this.pool.query<R>(text, values))).rows;
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.closed) throw new LimitStoreUnavailableError('The PostgreSQL limit store is closed');
    try {
      // Under the event store's migration lock for the schema: one migration at a time.
      this.ready ??= migrateUnderLock(this.pool, this.schemaName, ddl(this.schema)).catch((error: unknown) => {
        this.ready = undefined;
        throw error;
      });
      await this.ready;
      return await operation();
    } catch (error) {
      throw unavailable(error);
    }
  }
}

/** Statement errors are bugs and pass unchanged; every other failure means "cannot serve now". */
function unavailable(error: unknown): unknown {
  const state = sqlStateOf(error);
  if (state !== undefined && ['22', '23', '42'].includes(state.slice(0, 2))) return error;
  if (error instanceof LimitStoreUnavailableError || !(error instanceof Error)) return error;
  return new LimitStoreUnavailableError(`PostgreSQL limit store failure${state ? ` (${state})` : ''}: ${error.message}`, { cause: error });
}
