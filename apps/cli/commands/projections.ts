import fs from 'node:fs';
import type { EventStore } from '../../../infra/event-store/port.ts';
import type { Projection } from '../../../projections/projection.ts';
import { createReadModels } from '../../../projections/read-models.ts';
import { compareSnapshots, type ModelComparison } from '../../../projections/snapshot-comparison.ts';
import { readModelsSnapshotFile } from '../../boot/runtime.ts';
import type { Config } from '../../services/config.ts';
import { openEventStore } from '../../boot/stores.ts';
import { replayInto } from '../../read-models/feed.ts';
import { restoreSnapshot, saveSnapshot, type Checkpoint } from '../../read-models/snapshots.ts';

export const NO_USABLE_SNAPSHOT = 'no usable snapshot: the live read models are built from event 0 too';

export interface RebuildReport {
  /** The store's head when the comparison started; both sides reflect the history up to it. */
  head: bigint;
  snapshot: { file: string; usable: true; position: bigint } | { file: string; usable: false; found: boolean };
  equal: boolean;
  models: ModelComparison[];
  /** With `replace`: the checkpoint the rebuilt read models were written at, or null when there was nothing to write. */
  replaced?: Checkpoint | null;
}

/**
 * Rebuilds every read model from event 0 and compares it with the live one, as a restarting
 * process would build it: the checkpointed snapshot, then the events after its position. Both
 * sides stop at the head read once (after the snapshot, so the snapshot never reflects more).
 * With `replace`, the rebuilt read models then become the snapshot.
 */
export const rebuildProjections = async (
  store: EventStore,
  createProjections: () => readonly Projection[],
  snapshotFile: string,
  options: { replace?: boolean } = {},
): Promise<RebuildReport> => {
  const live = createProjections();
  const restored = await restoreSnapshot(snapshotFile, store, live);
  const head = await store.headPosition();
  await replayInto(store, live, { after: restored?.position ?? 0n, upTo: head });

  const rebuilt = createProjections();
  const reached = await replayInto(store, rebuilt, { after: 0n, upTo: head });

  const models = rebuilt.map((projection) => {
    const counterpart = live.find((p) => p.name === projection.name)!;
    return compareSnapshots(projection.name, counterpart.snapshot(), projection.snapshot());
  });
  const report: RebuildReport = {
    head,
    snapshot: restored
      ? { file: snapshotFile, usable: true, position: restored.position }
      : { file: snapshotFile, usable: false, found: fs.existsSync(snapshotFile) },
    equal: models.every((m) => m.equal),
    models,
  };
  if (options.replace) {
    // The checkpoint is the last event applied: restoreSnapshot finds it again at its position.
    if (reached) saveSnapshot(snapshotFile, rebuilt, reached);
    report.replaced = reached ?? null;
  }
  return report;
};

const counted = (counts: Record<string, number>) =>
  Object.entries(counts)
    .map(([collection, n]) => `${n} ${n === 1 ? collection.replace(/s$/, '') : collection}`)
    .join(', ');

const listed = (what: string, list: { count: number; items: string[] }) =>
  list.count === 0 ? [] : [`${list.count} ${what}: ${list.items.join(', ')}${list.count > list.items.length ? `, … (${list.count - list.items.length} more)` : ''}`];

/** One line per read model: `users: equal (1 user, 1 session)`, or what differs. */
export const modelLine = (model: ModelComparison): string => {
  if (model.equal) return `${model.name}: equal (${counted(model.rebuilt)})`;
  const parts = [
    ...listed('missing in live', model.missingInLive),
    ...listed('extra in live', model.extraInLive),
    ...listed('different', {
      count: model.different.count,
      items: model.different.items.map((d) => `${d.id} (${d.fields.join(', ')})`),
    }),
  ];
  return `${model.name}: DIFFERENT — ${parts.join('; ')} [live: ${counted(model.live)}; rebuilt: ${counted(model.rebuilt)}]`;
};

/** The report for a reader. */
export const reportLines = (report: RebuildReport): string[] => [
  report.snapshot.usable
    ? `live read models: the snapshot ${report.snapshot.file} at position ${report.snapshot.position}, then the events up to ${report.head}`
    : `${NO_USABLE_SNAPSHOT} (${report.snapshot.found ? 'unusable' : 'absent'}: ${report.snapshot.file})`,
  `rebuilt read models: from event 0 up to position ${report.head}`,
  ...report.models.map(modelLine),
  ...(report.replaced === undefined
    ? []
    : [
        report.replaced
          ? `replaced the snapshot with the rebuilt read models at position ${report.replaced.position}`
          : 'snapshot not replaced: no event of the read models in the store',
      ]),
];

/** The report as one JSON object, positions as strings. */
export const reportJson = (report: RebuildReport) => ({
  equal: report.equal,
  head: report.head.toString(),
  snapshot: report.snapshot.usable
    ? { file: report.snapshot.file, usable: true, position: report.snapshot.position.toString() }
    : { file: report.snapshot.file, usable: false, found: report.snapshot.found, note: NO_USABLE_SNAPSHOT },
  models: report.models,
  ...(report.replaced === undefined
    ? {}
    : { replaced: report.replaced ? { position: report.replaced.position.toString(), eventId: report.replaced.eventId } : null }),
});

/**
 * `relay projections rebuild`: the report on `out`, warnings and the reason of a failure on
 * `err`; resolves to whether every read model equals its rebuild.
 */
export const runProjectionsRebuild = async (
  config: Config,
  options: { json?: boolean; replace?: boolean },
  io: { out: (line: string) => void; err: (line: string) => void },
): Promise<boolean> => {
  if (options.replace)
    io.err('warning: --replace overwrites the read-model snapshot: stop Relay first (a running process keeps its own read models and writes them over it)');
  const store = await openEventStore(config);
  try {
    const report = await rebuildProjections(store, () => createReadModels().all, readModelsSnapshotFile(config), { replace: options.replace ?? false });
    if (options.json) io.out(JSON.stringify(reportJson(report)));
    else for (const line of reportLines(report)) io.out(line);
    if (!report.equal) {
      const differing = report.models.filter((m) => !m.equal).map((m) => m.name);
      io.err(`the live read models differ from their rebuild from event 0: ${differing.join(', ')}`);
    }
    return report.equal;
  } finally {
    await store.close();
  }
};
