import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import type { EventStore } from '../../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../../infra/event-store/sqlite/sqlite-event-store.ts';
import { printEvents } from './events.ts';

const opened: { store: EventStore; dir: string }[] = [];
afterEach(async () => {
  for (const { store, dir } of opened.splice(0)) {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

it('reads the next page only once the last one was taken by a slow reader (a full pipe made stdout buffer the history: ENOBUFS)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-events-'));
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'normal' });
  opened.push({ store, dir });
  for (let i = 0; i < 5; i++) await store.appendToStream(`probe-${i}`, Array.from({ length: 500 }, (_, n) => ({ type: 'Probed', data: { n } })));
  let writing = false;
  let readsWhileWriting = 0;
  const readAll = store.readAll.bind(store);
  const watched = { ...store, readAll: (...args: Parameters<EventStore['readAll']>) => {
    if (writing) readsWhileWriting++;
    return readAll(...args);
  } } as EventStore;
  const chunks: string[] = [];
  const printed = await printEvents(watched, {}, async (lines) => {
    writing = true;
    chunks.push(lines);
    await new Promise((resolve) => setTimeout(resolve, 5)); // the reader drains slowly
    writing = false;
  });
  expect(printed).toBe(2500);
  expect(chunks).toHaveLength(3); // pages of 1000
  expect(chunks.join('').trimEnd().split('\n')).toHaveLength(2500);
  expect(readsWhileWriting).toBe(0);
});
