import path from 'node:path';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Broker } from '../../infra/broker/port.ts';
import { createEventStorePopCursors } from '../../infra/broker/kafka/event-store-pop-cursors.ts';
import { createKafkaBroker } from '../../infra/broker/kafka/kafka-broker.ts';
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

/** Opens the broker that the configuration names; Kafka keeps its pop claims in the event store. */
export const openBroker = (config: Config, store: EventStore, log: Logger): Broker => {
  switch (config.BROKER) {
    case 'embedded':
      fs.mkdirSync(config.dataDir, { recursive: true });
      return createEmbeddedBroker({ path: path.join(config.dataDir, 'broker.db'), synchronous: config.SQLITE_SYNCHRONOUS });
    case 'kafka':
      return createKafkaBroker({
        brokers: config.KAFKA_BROKERS!.split(','),
        cursors: createEventStorePopCursors(store),
        partitions: config.KAFKA_PARTITIONS,
        prefix: config.KAFKA_TOPIC_PREFIX,
        log: log.child({ component: 'kafka' }),
      });
  }
};
