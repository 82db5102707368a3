import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { createReadModels } from '../../projections/read-models.ts';
import { readSnapshotFile } from '../../test/support/read-model-snapshot-file.ts';
import { tempDirs } from '../../test/support/temp-dirs.ts';
import { userRegistered as registered } from '../../test/support/user-events.ts';
import { restoreSnapshot, saveSnapshot } from './snapshots.ts';

const tempDir = tempDirs('relay-snapshots-');

/** A store with two users, every read model fed with them, and a snapshot of those models. */
const saved = async () => {
  const dir = tempDir();
  const file = path.join(dir, 'read-models.sqlite.json');
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
  await store.appendToStream('user-u1', [registered('u1')]);
  await store.appendToStream('user-u2', [registered('u2')]);
  const events = await store.readAll({ after: 0n, limit: 10 });
  const models = createReadModels();
  for (const event of events) for (const projection of models.all) projection.apply(event);
  const last = events.at(-1)!;
  saveSnapshot(file, models.all, { position: last.globalPosition, eventId: last.id });
  return { file, store, checkpoint: { position: last.globalPosition, eventId: last.id } };
};

/** The byte range of one model's section, from the header line. */
const sectionOf = (file: string, name: string) => {
  const text = fs.readFileSync(file, 'utf8');
  const headerLine = text.slice(0, text.indexOf('\n'));
  const header = JSON.parse(headerLine) as { sections: [string, number, number][] };
  const [, offset, length] = header.sections.find(([n]) => n === name)!;
  return { start: Buffer.byteLength(headerLine) + 1 + offset, length };
};

describe('read-model snapshots', () => {
  it('restore every model at the checkpoint they were saved at', async () => {
    const { file, store, checkpoint } = await saved();
    const { position, eventId } = readSnapshotFile(file);
    expect({ position, eventId }).toEqual({ position: checkpoint.position.toString(), eventId: checkpoint.eventId });
    const models = createReadModels();
    expect(await restoreSnapshot(file, store, models.all)).toEqual(checkpoint);
    expect(['u1', 'u2'].map((id) => models.users.user(id)?.email)).toEqual(['u1@example.com', 'u2@example.com']);
    await store.close();
  });

  it('read back text beyond ASCII as it was (a key preview ends in "…")', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'read-models.sqlite.json');
    const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    const name = 'Zoë 🚀 …';
    await store.appendToStream('user-u1', [{ ...registered('u1'), data: { ...registered('u1').data, name } }]);
    const [event] = await store.readAll({ after: 0n, limit: 1 });
    const models = createReadModels();
    for (const projection of models.all) projection.apply(event!);
    saveSnapshot(file, models.all, { position: event!.globalPosition, eventId: event!.id });
    const restored = createReadModels();
    expect(await restoreSnapshot(file, store, restored.all)).toEqual({ position: event!.globalPosition, eventId: event!.id });
    expect(restored.users.user('u1')?.name).toBe(name);
    await store.close();
  });

  it('give a thread only the models it keeps, without reading the others (the credentials, in role all’s pipeline thread)', async () => {
    const { file, store, checkpoint } = await saved();
    // The credentials' section made unreadable: a thread that keeps them refuses the snapshot,
    // one that does not never reads it.
    const { start, length } = sectionOf(file, 'credentials');
    const fd = fs.openSync(file, 'r+');
    fs.writeSync(fd, Buffer.alloc(length, '#'), 0, length, start);
    fs.closeSync(fd);
    expect(await restoreSnapshot(file, store, createReadModels().all)).toBeUndefined();
    const pipeline = createReadModels({ credentials: false });
    expect(await restoreSnapshot(file, store, pipeline.all)).toEqual(checkpoint);
    expect(pipeline.users.user('u2')?.email).toBe('u2@example.com');
    await store.close();
  });

  it('refuse a file cut short, one of an older format (one JSON text) and one that is not a snapshot', async () => {
    const { file, store } = await saved();
    const whole = fs.readFileSync(file);
    fs.writeFileSync(file, whole.subarray(0, whole.length - 1));
    expect(await restoreSnapshot(file, store, createReadModels().all)).toBeUndefined();
    const header = JSON.parse(whole.toString('utf8', 0, whole.indexOf(0x0a))) as { position: string; eventId: string };
    fs.writeFileSync(file, JSON.stringify({ format: 3, position: header.position, eventId: header.eventId, models: {} }));
    expect(await restoreSnapshot(file, store, createReadModels().all)).toBeUndefined();
    fs.writeFileSync(file, '{}\n');
    expect(await restoreSnapshot(file, store, createReadModels().all)).toBeUndefined();
    await store.close();
  });
});
