import type pg from 'pg';
import { MIGRATION_LOCK_CLASS } from './identifiers.ts';

/**
 * Runs a schema's DDL in one transaction under the schema's migration lock (an advisory lock at
 * transaction level), so that processes starting together migrate one after the other.
 */
export const migrateUnderLock = async (pool: pg.Pool, schema: string, ddl: string): Promise<void> => {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1, hashtext($2))', [MIGRATION_LOCK_CLASS, schema]);
    await client.query(ddl);
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
};
