/**
 * Reading the whole history back, with Relay stopped: `relay projections rebuild --json` (every
 * read model from event 0, compared with the live snapshot), `relay events` (the history as JSON
 * lines, read by the bench as fast as it comes), and the store's own bulk read of the same table as
 * the anchor: PostgreSQL's `COPY … TO STDOUT` (through psql), or, on the embedded store, a plain
 * scan of the events table through better-sqlite3.
 */
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { ROOT } from '../../../test/support/relay-process.ts';
import { tracked } from './relay-run.ts';

export interface ReplayFigures {
  /** `relay projections rebuild`: wall time of the command, and whether the models were equal. */
  readonly rebuildS: number;
  readonly rebuildEqual: boolean;
  /** `relay events` (its output to /dev/null): the events it wrote (the table's rows, counted by the anchor) and its wall time. */
  readonly eventsLines: number;
  readonly eventsS: number;
  /** The anchor: rows and wall time. */
  readonly anchorRows: number;
  readonly anchorS: number;
  readonly anchor: string;
}

/** Runs a command; resolves with its exit code, what it printed (up to `keep` bytes), and how many lines. */
const runCounting = (command: string, args: string[], env: Record<string, string>, keep = 1_000_000) =>
  new Promise<{ code: number; out: string; lines: number; err: string }>((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    tracked(child);
    let out = '';
    let err = '';
    let lines = 0;
    child.stdout.on('data', (chunk: Buffer) => {
      for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, i + 1)) lines++;
      if (out.length < keep) out += chunk.toString('utf8', 0, Math.min(chunk.length, keep - out.length));
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (err.length < 20_000) err += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, out, lines, err }));
  });

/** Runs a command with its output thrown away; resolves with its exit code and error output. */
const runToNull = (command: string, args: string[], env: Record<string, string>) =>
  new Promise<{ code: number; err: string }>((resolve, reject) => {
    const sink = fs.openSync('/dev/null', 'w');
    const child = tracked(spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', sink, 'pipe'] }));
    fs.closeSync(sink);
    let err = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      if (err.length < 20_000) err += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code: code ?? -1, err }));
  });

const seconds = async <T>(work: () => Promise<T>): Promise<[T, number]> => {
  const began = performance.now();
  const result = await work();
  return [result, (performance.now() - began) / 1000];
};

export const measureReplay = async (env: Record<string, string>, store: { kind: 'sqlite'; dataDir: string } | { kind: 'postgres'; url: string; schema: string }): Promise<ReplayFigures> => {
  const relay = (args: string[]) => runCounting(process.execPath, ['bin/relay.js', ...args], env);
  const [rebuild, rebuildS] = await seconds(() => relay(['projections', 'rebuild', '--json']));
  let rebuildEqual = false;
  try {
    rebuildEqual = (JSON.parse(rebuild.out.trim().split('\n').pop() ?? '{}') as { equal?: boolean }).equal === true;
  } catch {
    throw new Error(`relay projections rebuild printed no report (exit ${rebuild.code}): ${rebuild.err.slice(0, 2000)}`);
  }
  // Its lines go to /dev/null: read through a pipe, `relay events` over ~1.7 million events
  // failed with ENOBUFS (it writes its pages without waiting for the pipe to drain).
  const [events, eventsS] = await seconds(() => runToNull(process.execPath, ['bin/relay.js', 'events'], env));
  if (events.code !== 0) throw new Error(`relay events exited ${events.code}: ${events.err.slice(0, 2000)}`);
  if (store.kind === 'postgres') {
    const [copy, anchorS] = await seconds(() => runCounting('psql', [store.url, '-v', 'ON_ERROR_STOP=1', '-c', `COPY "${store.schema}".events TO STDOUT`], {}, 0));
    if (copy.code !== 0) throw new Error(`psql COPY exited ${copy.code}: ${copy.err}`);
    return { rebuildS, rebuildEqual, eventsLines: copy.lines, eventsS, anchorRows: copy.lines, anchorS, anchor: 'PostgreSQL COPY … TO STDOUT (psql)' };
  }
  const [rows, anchorS] = await seconds(async () => {
    const db = new Database(path.join(store.dataDir, 'events.db'), { readonly: true });
    try {
      let n = 0;
      for (const row of db.prepare('SELECT * FROM events ORDER BY global_position').raw().iterate()) if (row) n++;
      return n;
    } finally {
      db.close();
    }
  });
  return { rebuildS, rebuildEqual, eventsLines: rows, eventsS, anchorRows: rows, anchorS, anchor: 'SQLite scan of the events table (better-sqlite3)' };
};
