/**
 * A read-model snapshot file as a whole (apps/read-models/snapshots.ts, format 5: a JSON header
 * line naming each model's byte range after the line, then each model's section of lines of JSON), for tests that read
 * what Relay wrote or tamper with it.
 */
import fs from 'node:fs';
import { encodeSection, readSection } from '../../apps/read-models/snapshot-lines.ts';

export interface SnapshotContent {
  format: number;
  position: string;
  eventId: string;
  models: Record<string, any>;
}

export const readSnapshotFile = (file: string): SnapshotContent => {
  const bytes = fs.readFileSync(file);
  const end = bytes.indexOf(0x0a);
  const header = JSON.parse(bytes.toString('utf8', 0, end)) as { format: number; position: string; eventId: string; sections: [string, number, number][] };
  const fd = fs.openSync(file, 'r');
  try {
    const models = Object.fromEntries(header.sections.map(([name, offset, length]) => [name, readSection(fd, end + 1 + offset, length, Buffer.alloc(1024))!.value]));
    return { format: header.format, position: header.position, eventId: header.eventId, models };
  } finally {
    fs.closeSync(fd);
  }
};

export const writeSnapshotFile = (file: string, content: SnapshotContent): void => {
  const bodies = Object.entries(content.models).map(([name, model]) => [name, encodeSection(model)] as const);
  let offset = 0;
  const sections = bodies.map(([name, body]) => {
    const section = [name, offset, body.length];
    offset += body.length;
    return section;
  });
  const header = Buffer.from(`${JSON.stringify({ format: content.format, position: content.position, eventId: content.eventId, sections })}\n`);
  fs.writeFileSync(file, Buffer.concat([header, ...bodies.map(([, body]) => body)]));
};
