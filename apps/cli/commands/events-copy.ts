import type { EventStore } from '../../../infra/event-store/port.ts';
import type { Config } from '../../services/config.ts';
import { copyEventStore, type CopyReport } from '../../history/event-store-copy.ts';
import { openEventStoreAt } from '../../boot/stores.ts';
import { configuredStoreLocation, describeStoreLocation, parseStoreLocation, type StoreLocation } from '../../services/store-location.ts';

export interface EventsCopyOptions {
  /** The target store's URL. */
  to: string;
  /** The source store's URL; default: the configured store. */
  from?: string;
}

const sameLocation = (a: StoreLocation, b: StoreLocation) => JSON.stringify(a) === JSON.stringify(b);

/** The report as one JSON object, positions as strings. */
export const reportJson = (from: StoreLocation, to: StoreLocation, report: CopyReport) =>
  JSON.stringify({
    from: describeStoreLocation(from),
    to: describeStoreLocation(to),
    copied: report.copied,
    skipped: report.skipped,
    sourceEvents: report.sourceEvents,
    targetEvents: report.targetEvents,
    streams: report.streams,
    sourceHead: report.sourceHead.toString(),
    targetHead: report.targetHead.toString(),
    checkpoints: Object.fromEntries(Object.entries(report.checkpoints).map(([name, [a, b]]) => [name, { from: a.toString(), to: b.toString() }])),
    verified: true,
  });

/** `relay events copy`: the whole history into another store, resumable, verified at the end. */
export const copyEvents = async (config: Config, options: EventsCopyOptions, io: { out: (line: string) => void; err: (line: string) => void }) => {
  const from = options.from === undefined ? configuredStoreLocation(config) : parseStoreLocation(options.from);
  const to = parseStoreLocation(options.to);
  if (sameLocation(from, to)) throw new Error('--to names the store copied from: give another store');
  io.err(`copying ${describeStoreLocation(from)} → ${describeStoreLocation(to)}`);
  const stores: EventStore[] = [];
  // An EventStoreDB end keeps its data keys in the configured PostgreSQL database (DATABASE_URL).
  const open = { sqliteSynchronous: config.SQLITE_SYNCHRONOUS, ...(config.DATABASE_URL ? { keyVault: { connectionString: config.DATABASE_URL, schema: config.DATABASE_SCHEMA } } : {}) };
  try {
    const source = await openEventStoreAt(from, open);
    stores.push(source);
    const target = await openEventStoreAt(to, open);
    stores.push(target);
    let lastReport = 0;
    const report = await copyEventStore(source, target, {
      onProgress: (progress) => {
        const now = Date.now();
        if (now - lastReport < 1000 && progress.position !== progress.head) return;
        lastReport = now;
        io.err(`  at position ${progress.position} of ${progress.head}: ${progress.copied} copied, ${progress.skipped} already there`);
      },
    });
    io.err(`verified: ${report.targetEvents} events in ${report.streams} streams, equal in both stores`);
    io.out(reportJson(from, to, report));
    return report;
  } finally {
    await Promise.all(stores.map((store) => store.close()));
  }
};
