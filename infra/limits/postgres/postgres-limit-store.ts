import type pg from 'pg';
import { LimitStoreUnavailableError, type LimitLease, type LimitStore } from '../port.ts';
import { MigratedPool } from './migrated-pool.ts';

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
  private readonly db: MigratedPool;
  private readonly sql: { lease: string; insert: string; giveBack: string; evict: string };

  constructor(options: PostgresLimitStoreOptions) {
    this.db = new MigratedPool({ ...options, max: options.poolSize ?? 4 }, ddl, 'limit store');
    const s = this.db.schema;
    this.sql = {
      lease: leaseSql(s),
      insert: `INSERT INTO ${s}.rate_windows (key, window_start, window_ms, granted) VALUES ($1, $2, $3, 0) ON CONFLICT (key) DO NOTHING`,
      giveBack: `UPDATE ${s}.rate_windows SET granted = GREATEST(0, granted - $3::integer) WHERE key = $1 AND window_start = $2`,
      evict: `DELETE FROM ${s}.rate_windows WHERE window_start + window_ms <= $1`,
    };
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
    const result = await this.db.run(() => this.db.pool.query(this.sql.evict, [Math.floor(now)]));
    return result.rowCount ?? 0;
  }

  close(): Promise<void> {
    return this.db.close();
  }

  private async query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<R[]> {
    return (await this.db.run(() => this.db.pool.query<R>(text, values))).rows;
  }
}
