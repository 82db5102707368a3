import pg from 'pg';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { limitStoreContract } from '../../../test/contracts/limit-store.contract.ts';
import { LimitStoreUnavailableError } from '../port.ts';
import { PostgresLimitStore } from './postgres-limit-store.ts';
import { seatStoreContract } from '../../../test/contracts/seat-store.contract.ts';
import { PostgresSeatStore } from './postgres-seat-store.ts';

const connectionString = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const unreachable = async (): Promise<string | undefined> => {
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

const dropSchema = async (schema: string): Promise<void> => {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
};

const reason = await unreachable();

if (reason !== undefined) {
  if (process.env.CI) {
    it('PostgreSQL is reachable (required when CI is set)', () => {
      throw new Error(`No PostgreSQL at ${connectionString}: ${reason}`);
    });
  } else {
    describe.skip(`PostgreSQL limit store: skipped, no server at ${connectionString} (${reason}); set DATABASE_URL`, () => {
      it('needs a PostgreSQL server', () => undefined);
    });
  }
} else {
  limitStoreContract('postgres', async () => {
    const schema = `relay_test_${randomBytes(6).toString('hex')}`;
    const store = new PostgresLimitStore({ connectionString, schema });
    return {
      store,
      second: async () => new PostgresLimitStore({ connectionString, schema }),
      teardown: async () => {
        await store.close();
        await dropSchema(schema);
      },
    };
  });

  seatStoreContract('postgres', async () => {
    const schema = `relay_test_${randomBytes(6).toString('hex')}`;
    const store = new PostgresSeatStore({ connectionString, schema });
    return {
      store,
      second: async () => new PostgresSeatStore({ connectionString, schema }),
      teardown: async () => {
        await store.close();
        await dropSchema(schema);
      },
    };
  });

  it('a seat of an instance that stopped renewing it (died) stops counting after its time to live', async () => {
    const schema = `relay_test_${randomBytes(6).toString('hex')}`;
    let clock = 1_800_000_000_000;
    const dead = new PostgresSeatStore({ connectionString, schema, ttlMs: 600_000, now: () => clock });
    const alive = new PostgresSeatStore({ connectionString, schema, ttlMs: 600_000, now: () => clock });
    try {
      expect(await dead.take('g', 1)).toEqual(expect.any(String));
      expect(await alive.take('g', 1)).toBeUndefined();
      clock += 600_000; // the dead one never renewed
      expect(await alive.take('g', 1)).toEqual(expect.any(String));
    } finally {
      await alive.close();
      await dead.close();
      await dropSchema(schema);
    }
  });

  describe('PostgreSQL limit store: failures', () => {
    it('answers LimitStoreUnavailableError when the server cannot be reached, and when closed', async () => {
      const away = new PostgresLimitStore({ connectionString: 'postgres://postgres@127.0.0.1:9/test', connectionTimeoutMs: 500 });
      await expect(away.lease('k', 1, 10, 60_000, Date.now())).rejects.toThrow(LimitStoreUnavailableError);
      await away.close();
      await expect(away.lease('k', 1, 10, 60_000, Date.now())).rejects.toThrow(LimitStoreUnavailableError);
    });
  });
}
