import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { dropSchema, noPostgres, POSTGRES_URL, postgresUnreachable } from '../../../test/support/postgres-server.ts';
import { limitStoreContract } from '../../../test/contracts/limit-store.contract.ts';
import { LimitStoreUnavailableError } from '../port.ts';
import { PostgresLimitStore } from './postgres-limit-store.ts';
import { seatStoreContract } from '../../../test/contracts/seat-store.contract.ts';
import { PostgresSeatStore } from './postgres-seat-store.ts';

const connectionString = POSTGRES_URL;
const reason = await postgresUnreachable();

if (reason !== undefined) {
  noPostgres('PostgreSQL limit and seat stores', reason);
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
