import type { Logger } from 'pino';
import type { KeyedHash } from '../../infra/crypto/keyed-hash.ts';
import type { LimitStore } from '../../infra/limits/port.ts';
import { MemorySeatStore } from '../../infra/limits/seats.ts';
import { RateLimiter } from './rate-limiter.ts';
import type { Config } from '../services/config.ts';
import type { Limiter, Limits } from '../services/limiter.ts';
import { SlicedLimiter } from './sliced-limiter.ts';

/**
 * Where a process's rate limits keep their windows. On the embedded default (one process holds
 * the store) in the process itself, as before: a RateLimiter per limit, no I/O on any request.
 * With PostgreSQL (EVENT_STORE=postgres, or eventstoredb whose keys live there) every instance of
 * a deployment shares them: a SlicedLimiter per limit on the PostgreSQL limit store, in the
 * deployment's schema. docs/limits.md says what each bound is.
 */

export const openLimits = async (config: Config, log: Logger, keyedHash: KeyedHash): Promise<Limits> => {
  if (config.EVENT_STORE === 'sqlite' || config.DATABASE_URL === undefined) {
    const seats = new MemorySeatStore();
    return { shared: false, limiter: (windowMs, evictEveryMs = windowMs) => new RateLimiter(windowMs, evictEveryMs), seats, close: () => seats.close() };
  }
  const [{ PostgresLimitStore }, { PostgresSeatStore }] = await Promise.all([
    import('../../infra/limits/postgres/postgres-limit-store.ts'),
    import('../../infra/limits/postgres/postgres-seat-store.ts'),
  ]);
  const store: LimitStore = new PostgresLimitStore({ connectionString: config.DATABASE_URL, schema: config.DATABASE_SCHEMA });
  const seats = new PostgresSeatStore({ connectionString: config.DATABASE_URL, schema: config.DATABASE_SCHEMA });
  const made: Limiter[] = [];
  return {
    shared: true,
    seats,
    limiter(windowMs, evictEveryMs = windowMs) {
      const limiter = new SlicedLimiter(store, {
        windowMs,
        evictEveryMs,
        storeKey: (key) => keyedHash.ref('rate-limit', key),
        onStoreFailure: (error) => log.warn({ component: 'limits', reason: error.message }, 'the shared rate-limit store cannot be reached: each instance holds the limits alone until it answers'),
      });
      made.push(limiter);
      return limiter;
    },
    async close() {
      for (const limiter of made.splice(0)) limiter.close();
      await Promise.all([store.close(), seats.close()]);
    },
  };
};
