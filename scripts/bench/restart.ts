/**
 * The restart step of `npm run bench` (issue 28, item 3): Relay, on the embedded default with the
 * history the bench's load left, is killed with SIGKILL and started again on the same data
 * directory; measured is the time from the new process's spawn to its first `GET /api/v1/health`
 * answered 200 (health is 503 until every part of role `all` runs, the delivery pipeline
 * included). The same start on an empty data directory, in the same run, says what part of it
 * grows with the history.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from '../../test/support/relay-process.ts';

export interface RestartFigures {
  /** Spawn → health 200 after a SIGKILL, with the history in place. */
  readonly withHistoryMs: number;
  /** Spawn → health 200 of a first start on an empty data directory. */
  readonly emptyMs: number;
  /** The data directory's size when it was killed. */
  readonly historyMb: number;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
  });

const directoryBytes = (dir: string): number =>
  fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const full = path.join(dir, entry.name);
    return sum + (entry.isDirectory() ? directoryBytes(full) : fs.statSync(full).size);
  }, 0);

/** Spawns `relay start` and waits for health 200; returns the process and how long that took. */
export const timedStart = async (env: Record<string, string>, port: number, deadlineMs = 120_000): Promise<{ child: ChildProcess; ms: number }> => {
  const began = performance.now();
  const child = spawn(process.execPath, ['bin/relay.js', 'start'], { cwd: ROOT, env: { ...process.env, ...env, PORT: String(port) }, stdio: ['ignore', 'ignore', 'inherit'] });
  for (;;) {
    const status = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then(
      async (res) => (await res.arrayBuffer(), res.status),
      () => 0,
    );
    if (status === 200) return { child, ms: performance.now() - began };
    if (child.exitCode !== null) throw new Error(`relay start exited with ${child.exitCode}`);
    if (performance.now() - began > deadlineMs) {
      child.kill('SIGKILL');
      throw new Error(`relay start did not answer health 200 within ${deadlineMs} ms`);
    }
    await sleep(5);
  }
};

/**
 * Kills `relay` (running on `env.DATA_DIR`, listening on `port`) with SIGKILL, starts it again and
 * times it; then times a first start on an empty directory. Returns the restarted process (the
 * caller stops it) with the figures.
 */
export const measureRestart = async (relay: ChildProcess, env: Record<string, string>, port: number): Promise<{ figures: RestartFigures; restarted: ChildProcess }> => {
  const historyMb = directoryBytes(env.DATA_DIR!) / 1e6;
  relay.kill('SIGKILL');
  await exited(relay);
  const restarted = await timedStart(env, port);
  const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-bench-empty-'));
  const emptyPort = await freePort();
  const empty = await timedStart({ ...env, DATA_DIR: emptyDir }, emptyPort);
  empty.child.kill('SIGTERM');
  await exited(empty.child);
  fs.rmSync(emptyDir, { recursive: true, force: true });
  return { figures: { withHistoryMs: restarted.ms, emptyMs: empty.ms, historyMb }, restarted: restarted.child };
};
