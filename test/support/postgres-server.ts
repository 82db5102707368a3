import pg from 'pg';
import { describe, it } from 'vitest';

/** The PostgreSQL the contract suites use: `DATABASE_URL`, else the local server (database `test`). */
export const POSTGRES_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Why the server cannot be used, or undefined when it answers. */
export const postgresUnreachable = async (connectionString = POSTGRES_URL): Promise<string | undefined> => {
  const client = new pg.Client({ connectionString, connectionTimeoutMillis: 3000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('SELECT 1');
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  } finally {
    await client.end().catch(() => undefined);
  }
};

export const dropSchema = async (schema: string, connectionString = POSTGRES_URL): Promise<void> => {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
};

/**
 * Where no server answers: under CI one failing test (a suite that needs a server runs, never
 * skips), elsewhere a skipped suite that says how to give it one.
 */
export const noPostgres = (suite: string, reason: string): void => {
  if (process.env.CI) {
    it('PostgreSQL is reachable (required when CI is set)', () => {
      throw new Error(`No PostgreSQL at ${POSTGRES_URL}: ${reason}`);
    });
  } else {
    describe.skip(`${suite}: skipped, no server at ${POSTGRES_URL} (${reason}); set DATABASE_URL`, () => {
      it('needs a PostgreSQL server', () => undefined);
    });
  }
};
