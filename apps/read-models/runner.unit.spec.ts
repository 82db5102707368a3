import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import type { EventStore } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import { createReadModels } from '../../projections/read-models.ts';
import { startProjectionRunner } from './runner.ts';
import { eventually } from '../../test/support/eventually.ts';
import { readSnapshotFile } from '../../test/support/read-model-snapshot-file.ts';
import { tempDirs } from '../../test/support/temp-dirs.ts';
import { userRegistered as registered } from '../../test/support/user-events.ts';

const log = pino({ level: 'silent' });
const tempDir = tempDirs('relay-runner-');

describe('projection runner', () => {
  it('writes a snapshot on its tick once enough events changed the models, not for every one (a few replay in no time)', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'read-models.json');
    const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    const models = createReadModels();
    const runner = await startProjectionRunner(store, models.all, log, { file, everyMs: 10, minEvents: 3, quietMs: 3_600_000 });
    await store.appendToStream('user-u1', [registered('u1')]);
    await runner.catchUp();
    // Ten ticks and more with one event: none written (a fixed wait: it asserts that nothing happens).
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(fs.existsSync(file)).toBe(false);
    await store.appendToStream('user-u2', [registered('u2')]);
    await store.appendToStream('user-u3', [registered('u3')]);
    await runner.catchUp();
    await eventually(() => expect(readSnapshotFile(file).position).toBe('3'), 5000);
    await runner.stop();
    await store.close();
  });

  it('restores its snapshot and catches up from its position; a foreign snapshot is ignored', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'read-models.json');
    const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
    await store.appendToStream('user-u1', [registered('u1')]);
    await store.appendToStream('outbound-m1', [{ type: 'MessageDelivered', data: {} }]);

    const first = createReadModels();
    const runner = await startProjectionRunner(store, first.all, log, { file, everyMs: 60_000 });
    expect(first.users.user('u1')?.email).toBe('u1@example.com');
    expect(runner.position).toBe(1n);
    await store.appendToStream('user-u2', [registered('u2')]);
    await runner.catchUp();
    await runner.stop();
    expect(readSnapshotFile(file).position).toBe('3');

    // The snapshot is restored; what came after it is replayed.
    await store.appendToStream('user-u3', [registered('u3')]);
    const second = createReadModels();
    const resumed = await startProjectionRunner(store, second.all, log, { file, everyMs: 60_000 });
    expect(['u1', 'u2', 'u3'].map((id) => second.users.user(id)?.id)).toEqual(['u1', 'u2', 'u3']);
    expect(resumed.position).toBe(4n);
    await resumed.stop();
    await store.close();

    // Another store (its event 4 is not the one the snapshot saw): replay from 0.
    const other = createSqliteEventStore({ path: path.join(tempDir(), 'events.db'), synchronous: 'normal' });
    for (const id of ['x1', 'x2', 'x3', 'x4']) await other.appendToStream(`user-${id}`, [registered(id)]);
    const third = createReadModels();
    const replayed = await startProjectionRunner(other, third.all, log, { file, everyMs: 60_000 });
    expect(third.users.user('u1')).toBeUndefined();
    expect(third.users.user('x4')?.id).toBe('x4');
    await replayed.stop();
    await other.close();
  });

  it('resumes from the last event it applied after a failure, and says it is not following meanwhile', async () => {
    const dir = tempDir();
    const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal', pollIntervalMs: 5 });
    await store.appendToStream('user-u1', [registered('u1')]);
    // The second batch the store hands over fails once (as a store read would), before any of it is applied.
    let batches = 0;
    const flaky: EventStore = {
      ...store,
      subscribe: (options) =>
        store.subscribe({
          ...options,
          handler: (events) => {
            batches += 1;
            if (batches === 2) throw new Error('store read failed');
            return options.handler(events);
          },
        }),
    };
    const models = createReadModels();
    const runner = await startProjectionRunner(flaky, models.all, log);
    try {
      expect(runner.healthy).toBe(true);
      await store.appendToStream('user-u2', [registered('u2')]);
      // Checked in the same turn of the event loop as the failure is seen: the pause (50 ms) is not over.
      await vi.waitFor(() => expect(runner.healthy).toBe(false), { timeout: 5000, interval: 1 });
      await expect(runner.catchUp()).rejects.toThrow('The read models are not following the event store');
      await vi.waitFor(() => expect(runner.healthy).toBe(true), { timeout: 5000, interval: 2 });
      await runner.catchUp();
      expect(models.users.user('u2')?.email).toBe('u2@example.com');
      expect(runner.position).toBe(2n);
      await store.appendToStream('user-u3', [registered('u3')]);
      await runner.catchUp();
      expect(runner.position).toBe(3n);
    } finally {
      await runner.stop();
      await store.close();
    }
  });
});
