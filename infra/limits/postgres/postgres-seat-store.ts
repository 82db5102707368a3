import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { sqlStateOf } from '../../event-store/postgres/errors.ts';
import { quoteSchema } from '../../event-store/postgres/identifiers.ts';
import { migrateUnderLock } from '../../event-store/postgres/migration.ts';
import { LimitStoreUnavailableError } from '../port.ts';
import type { SeatStore } from '../seats.ts';

/**
 * Seats in PostgreSQL (`<schema>.seats`), shared by a deployment's instances. A take counts the
 * group's live seats and adds one in a transaction under an advisory lock on the group (two
 * instances never both take the last seat); each instance renews its seats every third of `ttlMs`,
 * and seats not renewed for `ttlMs` (their instance died or was cut off) no longer count.
 */
export interface PostgresSeatStoreOptions {
  readonly connectionString: string;
  readonly schema?: string;
  /** How long a seat counts after its instance last renewed it. Default 30 s. */
  readonly ttlMs?: number;
  readonly now?: () => number;
}

const SEAT_LOCK_CLASS = 724_004;

const ddl = (s: string) => `
CREATE SCHEMA IF NOT EXISTS ${s};
CREATE TABLE IF NOT EXISTS ${s}.seats (
  seat text PRIMARY KEY,
  grp text NOT NULL,
  instance text NOT NULL,
  expires_at bigint NOT NULL
);
CREATE INDEX IF NOT EXISTS seats_grp ON ${s}.seats (grp);
CREATE INDEX IF NOT EXISTS seats_instance ON ${s}.seats (instance);`;

export class PostgresSeatStore implements SeatStore {
  private readonly pool: pg.Pool;
  private readonly schema: string;
  private readonly schemaName: string;
  private readonly instance = randomUUID();
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly renewal: NodeJS.Timeout;
  private ready: Promise<void> | undefined;
  private closed = false;

  constructor(options: PostgresSeatStoreOptions) {
    this.schemaName = options.schema ?? 'relay';
    this.schema = quoteSchema(this.schemaName);
    this.ttlMs = options.ttlMs ?? 30_000;
    this.now = options.now ?? Date.now;
    this.pool = new pg.Pool({ connectionString: options.connectionString, max: 2, connectionTimeoutMillis: 5000 });
    this.pool.on('error', () => undefined);
    this.renewal = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.renewal.unref();
  }

  async take(group: string, cap: number): Promise<string | undefined> {
    const seat = randomUUID();
    return this.run(async () => {
      const client = await this.pool.connect();
      try {
        await client.query('BEGIN');
        await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [SEAT_LOCK_CLASS, group]);
        const now = this.now();
        const taken = await client.query(
          `INSERT INTO ${this.schema}.seats (seat, grp, instance, expires_at)
           SELECT $1, $2, $3, $4 WHERE (SELECT count(*) FROM ${this.schema}.seats WHERE grp = $2 AND expires_at > $5) < $6
           RETURNING seat`,
          [seat, group, this.instance, now + this.ttlMs, now, cap],
        );
        await client.query(`DELETE FROM ${this.schema}.seats WHERE grp = $1 AND expires_at <= $2`, [group, now]);
        await client.query('COMMIT');
        return taken.rowCount === 1 ? seat : undefined;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    });
  }

  async release(group: string, seat: string): Promise<void> {
    await this.run(() => this.pool.query(`DELETE FROM ${this.schema}.seats WHERE seat = $1 AND grp = $2`, [seat, group]));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    clearInterval(this.renewal);
    await this.run(() => this.pool.query(`DELETE FROM ${this.schema}.seats WHERE instance = $1`, [this.instance])).catch(() => undefined);
    this.closed = true;
    await this.pool.end();
  }

  private async renew(): Promise<void> {
    await this.run(() => this.pool.query(`UPDATE ${this.schema}.seats SET expires_at = $2 WHERE instance = $1`, [this.instance, this.now() + this.ttlMs]));
  }

  private async run<T>(operation: () => Promise<T>): Promise<T> {
    if (this.closed) throw new LimitStoreUnavailableError('The PostgreSQL seat store is closed');
    try {
      this.ready ??= migrateUnderLock(this.pool, this.schemaName, ddl(this.schema)).catch((error: unknown) => {
        this.ready = undefined;
        throw error;
      });
      await this.ready;
      return await operation();
    } catch (error) {
      const state = sqlStateOf(error);
      if ((state !== undefined && ['22', '23', '42'].includes(state.slice(0, 2))) || error instanceof LimitStoreUnavailableError || !(error instanceof Error)) throw error;
      throw new LimitStoreUnavailableError(`PostgreSQL seat store failure${state ? ` (${state})` : ''}: ${error.message}`, { cause: error });
    }
  }
}
