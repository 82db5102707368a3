import path from 'node:path';
import fs from 'node:fs';
import type { Broker } from '../../infra/broker/port.ts';
import { createEmbeddedBroker } from '../../infra/broker/embedded/embedded-broker.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createPostgresEventStore } from '../../infra/event-store/postgres/postgres-event-store.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { ConfigError, type Config } from './config.ts';

/** Opens the event store that the configuration names. */
export const openEventStore = (config: Config): EventStore => {
  switch (config.EVENT_STORE) {
    case 'sqlite':
      fs.mkdirSync(config.dataDir, { recursive: true });
      // 5 ms: commits of other processes (the CLI, other roles) reach subscribers within that.
      return createSqliteEventStore({ path: path.join(config.dataDir, 'events.db'), synchronous: config.SQLITE_SYNCHRONOUS, pollIntervalMs: 5 });
    case 'postgres':
      return createPostgresEventStore({ connectionString: config.DATABASE_URL!, schema: config.DATABASE_SCHEMA });
    case 'eventstoredb':
      throw new ConfigError(`Invalid configuration EVENT_STORE=${config.EVENT_STORE}: not available in this version (sqlite or postgres)`);
  }
};

/** Opens the broker that the configuration names. */
export const openBroker = (config: Config): Broker => {
  switch (config.BROKER) {
    case 'embedded':
      fs.mkdirSync(config.dataDir, { recursive: true });
      return createEmbeddedBroker({ path: path.join(config.dataDir, 'broker.db'), synchronous: config.SQLITE_SYNCHRONOUS });
    case 'kafka':
      throw new ConfigError('Invalid configuration BROKER=kafka: not available in this version (only embedded)');
  }
};
