import path from 'node:path';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Broker } from '../../infra/broker/port.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { SqliteSynchronous } from '../../infra/sqlite/open-sqlite.ts';
import type { Config } from './config.ts';
import { configuredStoreLocation, type StoreLocation } from './store-location.ts';

/*
 * Each adapter is imported when it is configured: the client libraries of the stores not in use
 * (gRPC for EventStoreDB, kafkajs, pg: about 11 MB of heap) are not loaded into every thread.
 */

/** Opens the event store that the configuration names. */
export const openEventStore = (config: Config): Promise<EventStore> =>
  openEventStoreAt(configuredStoreLocation(config), { sqliteSynchronous: config.SQLITE_SYNCHRONOUS });

/** Opens the event store at a location (the configured one, or one given to `relay events copy`). */
export const openEventStoreAt = async (location: StoreLocation, options: { sqliteSynchronous?: SqliteSynchronous } = {}): Promise<EventStore> => {
  switch (location.kind) {
    case 'sqlite': {
      const { createSqliteEventStore } = await import('../../infra/event-store/sqlite/sqlite-event-store.ts');
      fs.mkdirSync(path.dirname(location.file), { recursive: true });
      // 5 ms: commits of other processes (the CLI, other roles) reach subscribers within that.
      return createSqliteEventStore({ path: location.file, synchronous: options.sqliteSynchronous ?? 'full', pollIntervalMs: 5 });
    }
    case 'postgres': {
      const { createPostgresEventStore } = await import('../../infra/event-store/postgres/postgres-event-store.ts');
      return createPostgresEventStore({ connectionString: location.connectionString, schema: location.schema });
    }
    case 'eventstoredb': {
      const { createEventStoreDbEventStore } = await import('../../infra/event-store/eventstoredb/eventstoredb-event-store.ts');
      return createEventStoreDbEventStore({ connectionString: location.connectionString, ...(location.namespace ? { namespace: location.namespace } : {}) });
    }
  }
};

/** Opens the broker that the configuration names; Kafka keeps its pop claims in the event store. */
export const openBroker = async (config: Config, store: EventStore, log: Logger): Promise<Broker> => {
  switch (config.BROKER) {
    case 'embedded': {
      const { createEmbeddedBroker } = await import('../../infra/broker/embedded/embedded-broker.ts');
      fs.mkdirSync(config.dataDir, { recursive: true });
      return createEmbeddedBroker({ path: path.join(config.dataDir, 'broker.db'), synchronous: config.SQLITE_SYNCHRONOUS });
    }
    case 'kafka': {
      const [{ createKafkaBroker }, { createEventStorePopCursors }] = await Promise.all([
        import('../../infra/broker/kafka/kafka-broker.ts'),
        import('../../infra/broker/kafka/event-store-pop-cursors.ts'),
      ]);
      return createKafkaBroker({
        brokers: config.KAFKA_BROKERS!.split(','),
        cursors: createEventStorePopCursors(store),
        partitions: config.KAFKA_PARTITIONS,
        prefix: config.KAFKA_TOPIC_PREFIX,
        log: log.child({ component: 'kafka' }),
      });
    }
  }
};
