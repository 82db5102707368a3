import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { watchCommits, type CommitWatch } from './commit-watch.ts';

describe('watchCommits (a -wal file watched for other processes\' commits)', () => {
  let dir: string;
  let file: string;
  const watches: CommitWatch[] = [];
  const start = (options: { busyMs?: number; idleMs?: number; windowMs?: number } = {}) => {
    let looks = 0;
    const watch = watchCommits({ file, busyMs: options.busyMs ?? 5, idleMs: options.idleMs ?? 600_000, windowMs: options.windowMs ?? 50, look: () => void looks++ });
    watches.push(watch);
    return { watch, looks: () => looks };
  };
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-commit-watch-'));
    file = path.join(dir, 'events.db');
  });
  afterEach(() => {
    for (const watch of watches.splice(0)) watch.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('looks while the file changes and for a window after, then only at the idle interval', async () => {
    fs.writeFileSync(`${file}-wal`, '');
    const { watch, looks } = start();
    expect(watch.state).toBe('watching');
    fs.appendFileSync(`${file}-wal`, 'frame');
    await vi.waitFor(() => expect(looks()).toBeGreaterThanOrEqual(2), { timeout: 5000, interval: 2 });
    await vi.waitFor(() => expect(watch.state).toBe('watching'), { timeout: 5000, interval: 5 });
    const after = looks();
    // Written again: it looks again.
    fs.appendFileSync(`${file}-wal`, 'frame');
    await vi.waitFor(() => expect(looks()).toBeGreaterThan(after), { timeout: 5000, interval: 2 });
  });

  it('looks every busy interval while there is no file to watch, and watches it once it is there', async () => {
    const { watch, looks } = start({ idleMs: 50 });
    expect(watch.state).toBe('busy');
    await vi.waitFor(() => expect(looks()).toBeGreaterThanOrEqual(5), { timeout: 5000, interval: 2 });
    fs.writeFileSync(`${file}-wal`, '');
    // The next idle look watches the file; the window after its last change runs out.
    await vi.waitFor(() => expect(watch.state).toBe('watching'), { timeout: 5000, interval: 5 });
    fs.appendFileSync(`${file}-wal`, 'frame');
    await vi.waitFor(() => expect(watch.state).toBe('busy'), { timeout: 5000, interval: 1 });
  });

  it('looks every busy interval, past the window, while the file is removed, and watches it again once it is back', async () => {
    fs.writeFileSync(`${file}-wal`, '');
    const { watch, looks } = start({ idleMs: 50 });
    fs.rmSync(`${file}-wal`);
    await vi.waitFor(() => expect(watch.state).toBe('busy'), { timeout: 5000, interval: 2 });
    // A window alone gives about 10 looks; 40 more means it went on looking without a watch.
    const removedAt = looks();
    await vi.waitFor(() => expect(looks()).toBeGreaterThanOrEqual(removedAt + 40), { timeout: 5000, interval: 5 });
    expect(watch.state).toBe('busy');
    fs.writeFileSync(`${file}-wal`, '');
    await vi.waitFor(() => expect(watch.state).toBe('watching'), { timeout: 5000, interval: 5 });
  });

  it('stops looking once closed', async () => {
    fs.writeFileSync(`${file}-wal`, '');
    const closed = start({ idleMs: 10 });
    await vi.waitFor(() => expect(closed.looks()).toBeGreaterThanOrEqual(2), { timeout: 5000, interval: 2 });
    closed.watch.close();
    const closedAt = closed.looks();
    // A second watch on the file shows when the write below has been seen, and looked after.
    const open = start({ idleMs: 10 });
    fs.appendFileSync(`${file}-wal`, 'frame');
    await vi.waitFor(() => expect(open.looks()).toBeGreaterThanOrEqual(10), { timeout: 5000, interval: 2 });
    expect(closed.looks()).toBe(closedAt);
  });
});
