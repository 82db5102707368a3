import path from 'node:path';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Broker } from '../../infra/broker/port.ts';
import { createEventStorePopCursors } from '../../infra/broker/kafka/event-store-pop-cursors.ts';
import { createKafkaBroker } from '../../infra/broker/kafka/kafka-broker.ts';
import { createEmbeddedBroker } from '../../infra/broker/embedded/embedded-broker.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createEventStoreDbEventStore } from '../../infra/event-store/eventstoredb/eventstoredb-event-store.ts';
import { createPostgresEventStore } from '../../infra/event-store/postgres/postgres-event-store.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import type { SqliteSynchronous } from '../../infra/sqlite/open-sqlite.ts';
import type { Config } from './config.ts';
import { configuredStoreLocation, type StoreLocation } from './store-location.ts';

/** Opens the event store that the configuration names. */
export const openEventStore = (config: Config): EventStore =>
  openEventStoreAt(configuredStoreLocation(config), { sqliteSynchronous: config.SQLITE_SYNCHRONOUS });

/** Opens the event store at a location (the configured one, or one given to `relay events copy`). */
export const openEventStoreAt = (location: StoreLocation, options: { sqliteSynchronous?: SqliteSynchronous } = {}): EventStore => {
  switch (location.kind) {
    case 'sqlite':
      fs.mkdirSync(path.dirname(location.file), { recursive: true });
      // 5 ms: commits of other processes (the CLI, other roles) reach subscribers within that.
      return createSqliteEventStore({ path: location.file, synchronous: options.sqliteSynchronous ?? 'full', pollIntervalMs: 5 });
    case 'postgres':
      return createPostgresEventStore({ connectionString: location.connectionString, schema: location.schema });
    case 'eventstoredb':
      return createEventStoreDbEventStore({ connectionString: location.connectionString, ...(location.namespace ? { namespace: location.namespace } : {}) });
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
