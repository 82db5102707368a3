/**
 * Grows the scale bench's store from one measurement point to the next, with Relay stopped: the
 * new users' accounts and their share of the simulated history (writer phase: the store opened
 * with `SQLITE_SYNCHRONOUS=off` on the embedded store, as a bulk load may), then the part written
 * in real time through Relay's own context (live-phase.ts).
 */
import pg from 'pg';
import { type Config } from '../../../apps/services/config.ts';
import { quoteSchema } from '../../../infra/event-store/postgres/identifiers.ts';
import { messageRetentionMs } from '../../../apps/services/config.ts';
import { checkedSecretKey } from '../../../apps/boot/secret-key-check.ts';
import { openEventStoreAt } from '../../../apps/boot/stores.ts';
import { configuredStoreLocation, type StoreLocation } from '../../../apps/services/store-location.ts';
import { createMessageSealer } from '../../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../../infra/crypto/secret-box.ts';
import { writeHistory } from './history.ts';
import { createPostgresBulkWriter } from './postgres-bulk-writer.ts';
import { writeLivePhase } from './live-phase.ts';
import type { ScalePlan } from './plan.ts';
import { writePopulation, type Registry } from './population.ts';
import { HistoryClock } from './writer.ts';

export interface GrowthFigures {
  readonly users: number;
  /** Seconds spent on the accounts, the history, and the real-time part. */
  readonly populationS: number;
  readonly historyS: number;
  readonly liveS: number;
  readonly head: bigint;
  /** `extraEvents` with what the last point's measurements added. */
  readonly extraEvents: number;
  readonly historyUnits: number;
}

/**
 * Where the writer phase writes: the configured store, without waiting for each commit's flush
 * (`SQLITE_SYNCHRONOUS=off`; on PostgreSQL `synchronous_commit = off` for its connections): a
 * bulk load that a crash would only make the bench build again. Relay itself runs as configured.
 */
const bulkLocation = (location: StoreLocation): StoreLocation => {
  if (location.kind !== 'postgres') return location;
  const url = new URL(location.connectionString);
  url.searchParams.set('options', '-c synchronous_commit=off');
  return { ...location, connectionString: url.toString() };
};

/**
 * What autovacuum would have done after a bulk load (a DBA runs it by hand after one): the dead
 * rows of the keys destroyed in the history gone, the planner's statistics of the grown tables.
 * This machine's PostgreSQL runs with `autovacuum = off` (its CI configuration), where a Relay in
 * use would have it on: without this, the store Relay is measured on holds millions of dead key rows.
 */
export const vacuumAnalyze = async (connectionString: string, schema: string): Promise<void> => {
  const client = new pg.Client({ connectionString });
  await client.connect();
  try {
    const tables = await client.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1 ORDER BY 1', [schema]);
    for (const { tablename } of tables.rows) await client.query(`VACUUM (ANALYZE) ${quoteSchema(schema)}."${tablename}"`);
  } finally {
    await client.end();
  }
};

/**
 * Vacuumed after the history (the live phase reads it through Relay's store: planned on the
 * statistics of the point before, a read of the grown history outlasted the store's 10 s query
 * timeout at 9.4 million events) and after the live phase.
 */
const vacuumed = async (connectionString: string, schema: string, log: (line: string) => void) => {
  const t0 = performance.now();
  await vacuumAnalyze(connectionString, schema);
  log(`  VACUUM (ANALYZE) of the schema's tables: ${((performance.now() - t0) / 1000).toFixed(1)} s`);
};

/** Events a group adds in the live phase (request, created, members synced, member added). */
const EVENTS_PER_GROUP = 4;

export const grow = async (options: {
  config: Config;
  plan: ScalePlan;
  registry: Registry;
  clock: HistoryClock;
  from: number;
  to: number;
  concurrency: number;
  /**
   * Events the measurements of earlier points added (their sends), counted up to the last point's
   * head, and that head: the history aims that much higher, so that it holds the planned events.
   */
  extraEvents: number;
  lastHead: bigint;
  log: (line: string) => void;
}): Promise<GrowthFigures> => {
  const { config, plan, registry, from, to } = options;
  // The embedded store commits the appends in flight in groups; on PostgreSQL the bulk writer puts
  // many in one transaction (postgres-bulk-writer.ts: why).
  const location = bulkLocation(configuredStoreLocation(config));
  const opened = await openEventStoreAt(location, { sqliteSynchronous: 'off', sqliteCheckpoints: true });
  const bulk = location.kind === 'postgres' ? await createPostgresBulkWriter(opened, location.connectionString, location.schema) : undefined;
  const store = bulk ?? opened;
  const newApps = plan.users.slice(from, to).flatMap((u) => u.apps.map((a) => plan.apps[a]!));
  let populationS = 0;
  let historyS = 0;
  let historyUnits = 0;
  let startHead = 0n;
  let extraEvents = options.extraEvents;
  try {
    startHead = await store.headPosition();
    const secrets = createSecretBox(await checkedSecretKey(opened, config.RELAY_SECRET_KEY, config.dataDir));
    let t0 = performance.now();
    await writePopulation(
      {
        store,
        secrets,
        plan,
        clock: options.clock,
        registry,
        concurrency: options.concurrency,
        settings: {
          maxAppsPerUser: config.MAX_APPS_PER_USER,
          maxCredentialsPerUser: config.MAX_CREDENTIALS_PER_USER,
          sessionTtlHours: config.SESSION_TTL_HOURS,
          signInLinkTtlSeconds: config.SIGN_IN_LINK_TTL_SECONDS,
          webhookSecretOverlapHours: config.WEBHOOK_SECRET_OVERLAP_HOURS,
        },
      },
      from,
      to,
    );
    populationS = (performance.now() - t0) / 1000;
    options.log(`  accounts of users ${from}…${to - 1}: ${populationS.toFixed(1)} s, head ${await store.headPosition()}`);

    extraEvents = options.extraEvents + Number(startHead - options.lastHead);
    const target = plan.countsAt(to).events + extraEvents;
    const later = newApps.reduce((n, a) => n + a.waiting + (a.group ? EVENTS_PER_GROUP : 0), 0);
    const active = newApps.filter((a) => a.active).map((a) => registry.apps.get(a.index)!);
    t0 = performance.now();
    historyUnits = await writeHistory(
      { store, sealer: createMessageSealer(secrets), clock: options.clock, retentionMs: messageRetentionMs(config), concurrency: options.concurrency },
      active,
      BigInt(Math.max(0, target - later)),
      to,
    );
    historyS = (performance.now() - t0) / 1000;
    options.log(`  history: ${historyUnits} units in ${historyS.toFixed(1)} s, head ${await store.headPosition()}`);
  } finally {
    await bulk?.close();
    await opened.close();
  }
  if (location.kind === 'postgres') await vacuumed(location.connectionString, location.schema, options.log);
  const t0 = performance.now();
  const live = await writeLivePhase(
    config,
    newApps.map((a) => ({ plan: a, built: registry.apps.get(a.index)! })),
    options.concurrency,
  );
  const liveS = (performance.now() - t0) / 1000;
  const head = live.checkpointHead + BigInt(live.waiting);
  options.log(`  real time: ${live.groups} groups, ${live.waiting} waiting messages in ${liveS.toFixed(1)} s`);
  if (location.kind === 'postgres') await vacuumed(location.connectionString, location.schema, options.log);
  return { users: to, populationS, historyS, liveS, head, extraEvents, historyUnits };
};
