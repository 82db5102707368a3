import fs from 'node:fs';
import path from 'node:path';
import { threadId } from 'node:worker_threads';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { Projection } from '../../projections/projection.ts';
import { encodeSection, readSection } from './snapshot-lines.ts';

/**
 * Checkpointed read models: a snapshot of every read model with the position it reflects, in one
 * file written atomically (temporary file, then rename). At start the runner restores it and
 * catches up from its position instead of from event 0. A snapshot is only used if the store still
 * holds, at that position, the event the snapshot saw last (so a store that was replaced or reset
 * is replayed from 0); delete the file to rebuild from event 0.
 *
 * The file is a header line (JSON: format, checkpoint, and each model's byte range after the line)
 * followed by each model's section: lines of JSON of about 16 KiB (snapshot-lines.ts). A
 * thread reads and parses only the models it keeps (role `all`'s pipeline thread skips the
 * credentials), a line at a time. At 10,000 users the models were one 56 MB JSON text that each
 * thread read, parsed and collected whole (1.3-1.4 s read, 0.4 s parse, 0.6-1.0 s of collection per
 * thread, session 32).
 */
/**
 * 2: sessions carry their id and start (SessionEnded). 3: groups carry the digest of their last
 * recorded member list (the group sync skips an unchanged list by it). 4: a header line and a byte
 * range per model. 5: a model's section is lines of JSON. A snapshot of an older format is
 * rebuilt from the history.
 */
const FORMAT = 5;
/** The buffer a thread reads the sections' lines through (it grows for a longer line). */
const READ_BUFFER_BYTES = 256 * 1024;
/** The header names a handful of models: a longer first line is not a snapshot of this format. */
const MAX_HEADER_BYTES = 64 * 1024;

interface SnapshotHeader {
  format: number;
  position: string;
  eventId: string;
  /** [model name, offset after the header line, length in bytes]. */
  sections: [string, number, number][];
}

export interface Checkpoint {
  position: bigint;
  eventId: string;
}

export const saveSnapshot = (file: string, projections: readonly Pick<Projection, 'name' | 'snapshot'>[], checkpoint: Checkpoint): void => {
  const bodies = projections.map((p) => [p.name, encodeSection(p.snapshot())] as const);
  let offset = 0;
  const header: SnapshotHeader = {
    format: FORMAT,
    position: checkpoint.position.toString(),
    eventId: checkpoint.eventId,
    sections: bodies.map(([name, body]) => {
      const section: [string, number, number] = [name, offset, body.length];
      offset += body.length;
      return section;
    }),
  };
  fs.mkdirSync(path.dirname(file), { recursive: true });
  // Per process and thread: the threads of one process write their snapshots independently.
  const temporary = `${file}.${process.pid}.${threadId}.tmp`;
  const fd = fs.openSync(temporary, 'w');
  try {
    writeAll(fd, Buffer.from(`${JSON.stringify(header)}\n`));
    for (const [, body] of bodies) writeAll(fd, body);
  } finally {
    fs.closeSync(fd);
  }
  fs.renameSync(temporary, file);
};

const writeAll = (fd: number, buffer: Buffer) => {
  for (let written = 0; written < buffer.length; ) written += fs.writeSync(fd, buffer, written);
};

/** The header of a snapshot file and where its sections start, or undefined if it is not one of this format. */
const readHeader = (fd: number): { header: SnapshotHeader; start: number } | undefined => {
  const first = Buffer.alloc(MAX_HEADER_BYTES);
  const read = fs.readSync(fd, first, 0, first.length, 0);
  const end = first.subarray(0, read).indexOf(0x0a);
  if (end < 0) return undefined;
  const header = JSON.parse(first.toString('utf8', 0, end)) as Partial<SnapshotHeader>;
  if (header.format !== FORMAT || typeof header.position !== 'string' || !/^\d+$/.test(header.position) || typeof header.eventId !== 'string') return undefined;
  if (!Array.isArray(header.sections)) return undefined;
  return { header: header as SnapshotHeader, start: end + 1 };
};

/**
 * Reads the given models' sections of a snapshot file (every section when `names` is not given):
 * their parsed JSON by name, or undefined if any is missing or the file is not a snapshot of this format.
 */
export const readSnapshot = (file: string, names?: readonly string[]): { header: SnapshotHeader; models: Map<string, unknown> } | undefined => {
  const fd = fs.openSync(file, 'r');
  try {
    const found = readHeader(fd);
    if (!found) return undefined;
    const { header, start } = found;
    const models = new Map<string, unknown>();
    const buffer = Buffer.allocUnsafe(READ_BUFFER_BYTES);
    for (const name of names ?? header.sections.map(([sectionName]) => sectionName)) {
      const section = header.sections.find(([sectionName]) => sectionName === name);
      if (!section) return undefined;
      const [, offset, length] = section;
      const read = readSection(fd, start + offset, length, buffer);
      if (!read) return undefined; // cut short
      models.set(name, read.value);
    }
    return { header, models };
  } finally {
    fs.closeSync(fd);
  }
};

/** Restores the read models from the snapshot if it is usable; returns its checkpoint, else undefined. */
export const restoreSnapshot = async (file: string, store: EventStore, projections: readonly Projection[]): Promise<Checkpoint | undefined> => {
  let content: ReturnType<typeof readSnapshot>;
  try {
    content = readSnapshot(
      file,
      projections.map((p) => p.name),
    );
  } catch {
    return undefined;
  }
  if (!content) return undefined;
  const position = BigInt(content.header.position);
  const [seen] = await store.readAll({ after: position - 1n, limit: 1 });
  if (!seen || seen.globalPosition !== position || seen.id !== content.header.eventId) return undefined;
  for (const projection of projections) projection.restore(content.models.get(projection.name));
  return { position, eventId: content.header.eventId };
};
