import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createSqliteEventStore } from '../../../infra/event-store/sqlite/sqlite-event-store.ts';
import { createReadModels } from '../../../projections/read-models.ts';
import { replayInto } from '../../read-models/feed.ts';
import { saveSnapshot } from '../../read-models/snapshots.ts';
import { tempDirs } from '../../../test/support/temp-dirs.ts';
import { userRegistered as registered } from '../../../test/support/user-events.ts';
import { modelLine, rebuildProjections, reportLines } from './projections.ts';

const tempDir = tempDirs('relay-rebuild-');
const storeInTempDir = () => {
  const dir = tempDir();
  return { file: path.join(dir, 'read-models.sqlite.json'), store: createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' }) };
};
const models = () => createReadModels().all;

describe('relay projections rebuild', () => {
  it('replays a range: events of other categories skipped, nothing after `upTo` applied', async () => {
    const { store } = storeInTempDir();
    await store.appendToStream('user-u1', [registered('u1')]);
    await store.appendToStream('outbound-m1', [{ type: 'MessageDelivered', data: {} }]);
    await store.appendToStream('user-u2', [registered('u2')]);
    await store.appendToStream('user-u3', [registered('u3')]);
    const read = createReadModels();
    const reached = await replayInto(store, read.all, { after: 0n, upTo: 3n });
    expect(reached?.position).toBe(3n);
    expect(['u1', 'u2', 'u3'].map((id) => read.users.user(id)?.id)).toEqual(['u1', 'u2', undefined]);
    expect(await replayInto(store, read.all, { after: 3n, upTo: 3n })).toBeUndefined();
    await store.close();
  });

  it('live = snapshot + events after it; a snapshot that misses one is named; --replace writes the rebuild at the last event', async () => {
    const { store, file } = storeInTempDir();
    await store.appendToStream('user-u1', [registered('u1')]);
    await store.appendToStream('user-u2', [registered('u2')]);
    const [first] = await store.readAll({ after: 0n, limit: 1 });

    // The snapshot saw u1 only, and claims u1 was renamed.
    const seen = createReadModels();
    await replayInto(store, seen.all, { after: 0n, upTo: 1n });
    seen.users.user('u1')!.name = 'tampered';
    saveSnapshot(file, seen.all, { position: 1n, eventId: first!.id });

    const report = await rebuildProjections(store, models, file);
    expect(report.snapshot).toEqual({ file, usable: true, position: 1n });
    expect(report.head).toBe(2n);
    expect(report.equal).toBe(false);
    // u2 came after the snapshot: the live side has it too.
    expect(report.models.map(modelLine)).toEqual([
      'users: DIFFERENT — 1 different: users/u1 (name) [live: 2 users, 0 sessions, 0 contacts; rebuilt: 2 users, 0 sessions, 0 contacts]',
      'apps: equal (0 apps)',
      'credentials: equal (0 credentials)',
      'groups: equal (0 groups)',
      'invoices: equal (0 invoices)',
    ]);

    const replaced = await rebuildProjections(store, models, file, { replace: true });
    expect(replaced.equal).toBe(false);
    const [, second] = await store.readAll({ after: 0n, limit: 2 });
    expect(replaced.replaced).toEqual({ position: 2n, eventId: second!.id });
    const after = await rebuildProjections(store, models, file);
    expect(after.equal).toBe(true);
    expect(reportLines(after)).toEqual([
      `live read models: the snapshot ${file} at position 2, then the events up to 2`,
      'rebuilt read models: from event 0 up to position 2',
      'users: equal (2 users, 0 sessions, 0 contacts)',
      'apps: equal (0 apps)',
      'credentials: equal (0 credentials)',
      'groups: equal (0 groups)',
      'invoices: equal (0 invoices)',
    ]);
    await store.close();
  });

  it('a snapshot of another history is unusable: the live side is a replay too; --replace on an empty store writes nothing', async () => {
    const { store, file } = storeInTempDir();
    const empty = await rebuildProjections(store, models, file, { replace: true });
    expect([empty.equal, empty.replaced, fs.existsSync(file)]).toEqual([true, null, false]);

    await store.appendToStream('user-u1', [registered('u1')]);
    saveSnapshot(file, models(), { position: 1n, eventId: 'not-this-store' });
    const report = await rebuildProjections(store, models, file);
    expect(report.snapshot).toEqual({ file, usable: false, found: true });
    expect(report.equal).toBe(true);
    expect(reportLines(report)[0]).toBe(`no usable snapshot: the live read models are built from event 0 too (unusable: ${file})`);
    await store.close();
  });
});
