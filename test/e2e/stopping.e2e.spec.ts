/**
 * Stopping the command a user started stops what it started: `kill <pid>` of `npm start` (as
 * after the README's `npm start &`), of `npx relay start`, and of the echo bot as its README runs
 * it, leaves no process behind and, for Relay, frees its port.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/account-fixture.ts';
import { commandOf, descendantsOf, isRunning } from '../support/process-tree.ts';
import { freePort, ROOT, waitUntilAnswering } from '../support/relay-process.ts';
import { startupDeadlineMs } from '../support/startup-deadline.ts';

/** How long what was stopped may take to be gone (Relay's shutdown closes its stores first). */
const STOP_DEADLINE_MS = 20_000;

interface Started {
  readonly child: ChildProcess;
  output(): string;
}

const launch = (command: string, args: string[], env: Record<string, string>): Started => {
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return { child, output: () => output };
};

const portIsFree = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });

describe('stopping what a user started', () => {
  const leftovers: number[] = [];
  const dataDirs: string[] = [];
  afterEach(() => {
    // A failed test leaves nothing running behind it either.
    for (const pid of leftovers.splice(0)) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    for (const dir of dataDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Kills `started` with `signal`, then waits until it and every process it had started are gone. */
  const killAndExpectAllGone = async (started: Started, signal: NodeJS.Signals) => {
    const tree = [started.child.pid!, ...descendantsOf(started.child.pid!)];
    leftovers.push(...tree);
    const commands = new Map(tree.map((pid) => [pid, commandOf(pid)]));
    process.kill(started.child.pid!, signal);
    await waitFor(() => tree.every((pid) => !isRunning(pid)) || undefined, STOP_DEADLINE_MS, `every process to end after ${signal}`).catch((error: Error) => {
      const running = tree.filter(isRunning).map((pid) => `${pid} ${commands.get(pid)}`);
      throw new Error(`${error.message}; still running: ${running.join('; ')}\n${started.output()}`);
    });
    return commands;
  };

  const relayCase = (name: string, command: string, args: string[], signal: NodeJS.Signals) =>
    it(
      name,
      async () => {
        const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-stop-'));
        dataDirs.push(dataDir);
        const port = await freePort();
        const started = launch(command, args, { DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', SQLITE_SYNCHRONOUS: 'normal' });
        await waitUntilAnswering(port, { ended: () => started.child.exitCode ?? started.child.signalCode, output: started.output, giveUp: () => started.child.kill('SIGKILL') });
        const commands = await killAndExpectAllGone(started, signal);
        // The tree held Relay itself, not only npm.
        expect([...commands.values()].some((line) => /relay(\.js)? start/.test(line)), [...commands.values()].join('\n')).toBe(true);
        await waitFor(() => portIsFree(port), STOP_DEADLINE_MS, `port ${port} to be free`);
      },
      startupDeadlineMs() + 2 * STOP_DEADLINE_MS,
    );

  relayCase('npm start, killed with SIGTERM', 'npm', ['start'], 'SIGTERM');
  relayCase('npm start, killed with SIGKILL (it forwards nothing): Relay sees its launcher gone', 'npm', ['start'], 'SIGKILL');
  relayCase('npx relay start, killed with SIGTERM (a shell sits between npx and Relay)', 'npx', ['relay', 'start'], 'SIGTERM');

  it(
    'the echo bot, run as its README says, killed with SIGTERM',
    async () => {
      const readme = fs.readFileSync(path.join(ROOT, 'examples/echo-bot/README.md'), 'utf8');
      const line = readme.split('\n').find((l) => l.includes('examples/echo-bot/echo-bot.ts') && /^\S*RELAY_/.test(l));
      expect(line, 'the README’s command that runs the bot').toBeDefined();
      // As a shell runs a simple command: the assignments go into the environment, the rest is run.
      const words = line!.replace(/\s+#.*$/, '').trim().split(/\s+/);
      const argv = words.filter((w) => !/^[A-Z_]+=/.test(w));
      const unreachable = `http://127.0.0.1:${await freePort()}`;
      const started = launch(argv[0]!, argv.slice(1), { RELAY_URL: unreachable, RELAY_API_KEY: 'rly_not_a_key', ECHO_IDLE_MS: '100' });
      // It runs once it says that Relay cannot be reached.
      await waitFor(
        () => {
          if (started.child.exitCode !== null) throw new Error(`the bot exited with ${started.child.exitCode}: ${started.output()}`);
          return started.output().includes('Relay cannot be reached') || undefined;
        },
        startupDeadlineMs(),
        'the bot to poll',
      );
      await killAndExpectAllGone(started, 'SIGTERM');
    },
    startupDeadlineMs() + 2 * STOP_DEADLINE_MS,
  );
});
