import path from 'node:path';
import fs from 'node:fs';
import type { Logger } from 'pino';
import type { Broker } from '../../infra/broker/port.ts';
import type { EventStore, EventTagger } from '../../infra/event-store/port.ts';
import { tagsOf, TAGS_VERSION } from '../history/event-tags.ts';
import { CHECKPOINT_PAGES, LATE_CHECKPOINT_PAGES } from '../../infra/sqlite/checkpoint-pages.ts';
import type { SqliteSynchronous } from '../../infra/sqlite/open-sqlite.ts';
import { messageRetentionMs, type Config } from '../services/config.ts';
import { topicPolicyOf } from '../services/topology.ts';
import { configuredStoreLocation, type StoreLocation } from '../services/store-location.ts';

/*
 * Each adapter is imported when it is configured: the client libraries of the stores not in use
 * (gRPC for EventStoreDB, kafkajs, pg: about 11 MB of heap) are not loaded into every thread.
 */

/** Which apps each event concerns: the index every store keeps beside the history (apps/history/event-tags.ts). */
export const relayTagger: EventTagger = { version: TAGS_VERSION, tagsOf };

/**
 * Opens the event store that the configuration names. `checkpoints: false` (a thread or process
 * that does not deliver) leaves the checkpoints of the embedded store to the one that delivers.
 */
export const openEventStore = (config: Config, options: { checkpoints?: boolean; polling?: SqlitePolling } = {}): Promise<EventStore> =>
  openEventStoreAt(configuredStoreLocation(config), {
    sqliteSynchronous: config.SQLITE_SYNCHRONOUS,
    sqliteCheckpoints: options.checkpoints ?? true,
    ...(options.polling === undefined ? {} : { sqlitePolling: options.polling }),
    ...(config.EVENT_STORE === 'eventstoredb' ? { keyVault: { connectionString: config.DATABASE_URL!, schema: config.DATABASE_SCHEMA } } : {}),
  });

export interface OpenOptions {
  readonly sqliteSynchronous?: SqliteSynchronous;
  /** Whether this connection does the embedded store's checkpoints (default true; see openEventStore). */
  readonly sqliteCheckpoints?: boolean;
  /** How the embedded store learns of other processes' commits (default `own`). */
  readonly sqlitePolling?: SqlitePolling;
  /** EventStoreDB only: the PostgreSQL database and schema of its data keys (it has no tables of its own). */
  readonly keyVault?: { readonly connectionString: string; readonly schema: string };
}

/**
 * How an embedded store learns of other processes' commits (the CLI's, other roles'): `own`, by
 * looking every 5 ms while its `-wal` file changes and every 250 ms otherwise (a watch of the
 * file, infra/sqlite/commit-watch.ts; every 5 ms where it cannot be watched); `for-process`, the
 * same, and it tells the other threads of its process what it found (role `all`'s pipeline
 * thread); `told`, by those announcements, with a look every 250 ms in case the announcing thread
 * is gone (role `all`'s API thread). Polling every 5 ms all the time cost an idle thread about 30
 * ms of CPU a second on this project's VMs (a wake of an idle thread costs ~150 µs there).
 */
export type SqlitePolling = 'own' | 'for-process' | 'told';
const POLLING: Readonly<Record<SqlitePolling, { readonly pollIntervalMs: number; readonly idlePollIntervalMs?: number }>> = {
  own: { pollIntervalMs: 5, idlePollIntervalMs: 250 },
  'for-process': { pollIntervalMs: 5, idlePollIntervalMs: 250 },
  told: { pollIntervalMs: 250 },
};

/** Opens the event store at a location (the configured one, or one given to `relay events copy`). */
export const openEventStoreAt = async (location: StoreLocation, options: OpenOptions = {}): Promise<EventStore> => {
  switch (location.kind) {
    case 'sqlite': {
      const { createSqliteEventStore } = await import('../../infra/event-store/sqlite/sqlite-event-store.ts');
      fs.mkdirSync(path.dirname(location.file), { recursive: true });
      // Commits of other processes (the CLI, other roles) reach subscribers within 5 ms.
      const polling = options.sqlitePolling ?? 'own';
      return createSqliteEventStore({
        path: location.file,
        synchronous: options.sqliteSynchronous ?? 'full',
        ...POLLING[polling],
        announcePolledCommits: polling === 'for-process',
        tagger: relayTagger,
        autoCheckpointPages: options.sqliteCheckpoints === false ? LATE_CHECKPOINT_PAGES : CHECKPOINT_PAGES,
      });
    }
    case 'postgres': {
      const { createPostgresEventStore } = await import('../../infra/event-store/postgres/postgres-event-store.ts');
      return createPostgresEventStore({ connectionString: location.connectionString, schema: location.schema, tagger: relayTagger });
    }
    case 'eventstoredb': {
      const [{ createEventStoreDbEventStore }, { createPostgresKeyVault }] = await Promise.all([
        import('../../infra/event-store/eventstoredb/eventstoredb-event-store.ts'),
        import('../../infra/event-store/postgres/postgres-event-store.ts'),
      ]);
      return createEventStoreDbEventStore({
        connectionString: location.connectionString,
        ...(location.namespace ? { namespace: location.namespace } : {}),
        tagger: relayTagger,
        ...(options.keyVault ? { vault: createPostgresKeyVault(options.keyVault) } : {}),
      });
    }
  }
};

/** How Relay's topics are kept (apps/services/topology.ts): partitions, and the message retention. */
const relayTopicPolicy = (config: Config) => topicPolicyOf({ partitions: config.KAFKA_PARTITIONS, retentionMs: messageRetentionMs(config) });

/** Opens the broker that the configuration names; Kafka keeps its pop claims in the event store. */
export const openBroker = async (config: Config, store: EventStore, log: Logger, options: { maintenance?: boolean } = {}): Promise<Broker> => {
  switch (config.BROKER) {
    case 'embedded': {
      const { createEmbeddedBroker } = await import('../../infra/broker/embedded/embedded-broker.ts');
      fs.mkdirSync(config.dataDir, { recursive: true });
      return createEmbeddedBroker({
        path: path.join(config.dataDir, 'broker.db'),
        synchronous: config.SQLITE_SYNCHRONOUS,
        // Other processes' publishes (the CLI's, other roles'): looked for every 25 ms while the
        // `-wal` file changes, every 250 ms otherwise (commit-watch.ts), not 40 times a second idle.
        idlePollIntervalMs: 250,
        topicPolicy: relayTopicPolicy(config),
        // The retention of the log runs where delivery runs: one pruner per file, not one per thread.
        maintenance: options.maintenance ?? false,
      });
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
        topicPolicy: relayTopicPolicy(config),
        prefix: config.KAFKA_TOPIC_PREFIX,
        log: log.child({ component: 'kafka' }),
      });
    }
  }
};
