import type { TestProject } from 'vitest/node';
import { dockerEngineAvailable } from './docker.ts';

/**
 * The PostgreSQL of a test run: `DATABASE_URL` when set; a PostgreSQL 15 container (testcontainers)
 * where a Docker engine runs; otherwise the local server on 127.0.0.1:5432 (database `test`), which
 * `.ci/run` starts when it is down. The suites read `DATABASE_URL`.
 */
export default async function setup(_project: TestProject) {
  if (process.env.DATABASE_URL || !dockerEngineAvailable()) return;
  const { PostgreSqlContainer } = await import('@testcontainers/postgresql');
  const container = await new PostgreSqlContainer('postgres:15').withDatabase('test').start();
  process.env.DATABASE_URL = container.getConnectionUri();
  return async () => {
    await container.stop();
  };
}
