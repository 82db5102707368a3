import { randomUUID } from 'node:crypto';
import type { SeatStore } from '../seats.ts';
import { MigratedPool } from './migrated-pool.ts';

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
  private readonly db: MigratedPool;
  private readonly schema: string;
  private readonly instance = randomUUID();
  private readonly ttlMs: number;
  private readonly now: () => number;
  private readonly renewal: NodeJS.Timeout;
  /** Seats this instance holds: none, nothing to renew (an idle process asks nothing of PostgreSQL). */
  private held = 0;

  constructor(options: PostgresSeatStoreOptions) {
    this.db = new MigratedPool({ ...options, max: 2 }, ddl, 'seat store');
    this.schema = this.db.schema;
    this.ttlMs = options.ttlMs ?? 30_000;
    this.now = options.now ?? Date.now;
    this.renewal = setInterval(() => void this.renew().catch(() => undefined), Math.max(100, Math.floor(this.ttlMs / 3)));
    this.renewal.unref();
  }

  async take(group: string, cap: number): Promise<string | undefined> {
    const seat = randomUUID();
    return this.db.run(async () => {
      const client = await this.db.pool.connect();
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
        if (taken.rowCount !== 1) return undefined;
        this.held++;
        return seat;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    });
  }

  async release(group: string, seat: string): Promise<void> {
    const released = await this.db.run(() => this.db.pool.query(`DELETE FROM ${this.schema}.seats WHERE seat = $1 AND grp = $2`, [seat, group]));
    if ((released.rowCount ?? 0) > 0) this.held = Math.max(0, this.held - 1);
  }

  async close(): Promise<void> {
    if (this.db.isClosed) return;
    clearInterval(this.renewal);
    if (this.held > 0) await this.db.run(() => this.db.pool.query(`DELETE FROM ${this.schema}.seats WHERE instance = $1`, [this.instance])).catch(() => undefined);
    await this.db.close();
  }

  private async renew(): Promise<void> {
    if (this.held === 0) return;
    await this.db.run(() => this.db.pool.query(`UPDATE ${this.schema}.seats SET expires_at = $2 WHERE instance = $1`, [this.instance, this.now() + this.ttlMs]));
  }
}
