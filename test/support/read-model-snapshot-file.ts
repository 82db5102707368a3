/**
 * A read-model snapshot file as a whole, read and written through Relay's own
 * apps/read-models/snapshots.ts, for tests that read what Relay wrote or tamper with it.
 */
import { readSnapshot, saveSnapshot } from '../../apps/read-models/snapshots.ts';

export interface SnapshotContent {
  position: string;
  eventId: string;
  models: Record<string, any>;
}

export const readSnapshotFile = (file: string): SnapshotContent => {
  const read = readSnapshot(file);
  if (!read) throw new Error(`${file} is not a read-model snapshot of the current format`);
  return { position: read.header.position, eventId: read.header.eventId, models: Object.fromEntries(read.models) };
};

export const writeSnapshotFile = (file: string, content: SnapshotContent): void =>
  saveSnapshot(
    file,
    Object.entries(content.models).map(([name, model]) => ({ name, snapshot: () => model })),
    { position: BigInt(content.position), eventId: content.eventId },
  );
