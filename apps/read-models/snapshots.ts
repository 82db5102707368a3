import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { Projection } from '../../projections/projection.ts';

/**
 * Checkpointed read models: a snapshot of every read model with the position it reflects, in
 * one JSON file written atomically (temporary file, then rename). At start the runner restores
 * it and catches up from its position instead of from event 0. A snapshot is only used if the
 * store still holds, at that position, the event the snapshot saw last (so a store that was
 * replaced or reset is replayed from 0); delete the file to rebuild from event 0.
 */
/**
 * 2: sessions carry their id and start (SessionEnded). 3: groups carry the digest of their last
 * recorded member list (the group sync skips an unchanged list by it). A snapshot of an older format
 * is rebuilt from the history.
 */
const FORMAT = 3;

interface SnapshotFile {
  format: number;
  position: string;
  eventId: string;
  models: Record<string, unknown>;
}

export interface Checkpoint {
  position: bigint;
  eventId: string;
}

export const saveSnapshot = (file: string, projections: readonly Projection[], checkpoint: Checkpoint): void => {
  const content: SnapshotFile = {
    format: FORMAT,
    position: checkpoint.position.toString(),
    eventId: checkpoint.eventId,
    models: Object.fromEntries(projections.map((p) => [p.name, p.snapshot()])),
  };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Per process and thread: the threads of one process write their snapshots independently.
  const temporary = `${file}.${process.pid}.${threadId}.tmp`;
  fs.writeFileSync(temporary, JSON.stringify(content));
  fs.renameSync(temporary, file);
};

/** Restores the read models from the snapshot if it is usable; returns its checkpoint, else undefined. */
export const restoreSnapshot = async (file: string, store: EventStore, projections: readonly Projection[]): Promise<Checkpoint | undefined> => {
  let content: SnapshotFile;
  try {
    content = JSON.parse(fs.readFileSync(file, 'utf8')) as SnapshotFile;
  } catch {
    return undefined;
  }
  if (content.format !== FORMAT || !/^\d+$/.test(content.position)) return undefined;
  if (!projections.every((p) => p.name in content.models)) return undefined;
  const position = BigInt(content.position);
  const [seen] = await store.readAll({ after: position - 1n, limit: 1 });
  if (!seen || seen.globalPosition !== position || seen.id !== content.eventId) return undefined;
  for (const projection of projections) projection.restore(content.models[projection.name]);
  return { position, eventId: content.eventId };
};
