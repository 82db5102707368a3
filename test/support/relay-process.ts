import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { startupDeadlineMs } from './startup-deadline.ts';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = path.join(ROOT, 'bin/relay.js');

export const freePort = (): Promise<number> =>
  new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });

/**
 * With RELAY_E2E_EVENT_STORE=postgres (the vitest project e2e-postgres) every Relay process of a
 * test runs on PostgreSQL, in a schema of its own.
 */
const eventStoreEnv = (dataDir: string): Record<string, string> =>
  process.env.RELAY_E2E_EVENT_STORE === 'postgres'
    ? {
        EVENT_STORE: 'postgres',
        DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
        // One schema per data directory: a restart on the same data finds the same events.
        DATABASE_SCHEMA: `relay_e2e_${path.basename(dataDir).replace(/[^A-Za-z0-9]/g, '_').toLowerCase()}`,
      }
    : {};

/**
 * With RELAY_E2E_BROKER=kafka (the vitest project e2e-kafka) every Relay process of a test runs on
 * the Kafka of the test run, under a topic prefix of its own data directory (a restart on the same
 * data finds the same topics; tests sharing the broker do not see each other's messages).
 */
const brokerEnv = (dataDir: string): Record<string, string> =>
  process.env.RELAY_E2E_BROKER === 'kafka'
    ? { BROKER: 'kafka', KAFKA_BROKERS: inject('kafkaBrokers'), KAFKA_TOPIC_PREFIX: `${path.basename(dataDir)}.` }
    : {};

const dropSchema = async (url: string, schema: string) => {
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  try {
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  } finally {
    await client.end();
  }
};

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `relay <args>` on the given data directory and waits for it to exit. */
export const runCli = (args: string[], env: Record<string, string>): Promise<CliResult> =>
  new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    // 'close', not 'exit': the process can exit before its output has been read from the pipes
    // (on a busy machine the README test once saw a `--help` cut short).
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });

export interface RelayProcess {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  readonly env: Record<string, string>;
  readonly child: ChildProcess;
  /** What the process wrote to stdout/stderr so far. */
  output(): string;
  cli(args: string[]): Promise<CliResult>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<number | null>;
  /** SIGKILL and wait for exit. */
  kill(): Promise<void>;
  /** Removes the data directory (after stop), and the PostgreSQL schema when there is one. */
  cleanup(): Promise<void>;
}

export interface StartOptions {
  env?: Record<string, string>;
  dataDir?: string;
  role?: string;
  /** Wait for /api/v1/health (default), or only for the port to accept connections. */
  waitFor?: 'health' | 'port';
}

const portAccepts = (port: number): Promise<boolean> =>
  new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1', () => {
      socket.end();
      resolve(true);
    });
    socket.on('error', () => resolve(false));
  });

const healthAnswers = (port: number): Promise<boolean> =>
  fetch(`http://127.0.0.1:${port}/api/v1/health`).then(
    (res) => res.status === 200,
    () => false,
  );

export interface Readiness {
  /** /api/v1/health answering 200 (default), or only the port accepting connections. */
  waitFor?: 'health' | 'port';
  /** How the process being waited for ended (its exit code or signal), null while it runs. */
  ended: () => number | NodeJS.Signals | null;
  /** What it wrote so far, for the error. */
  output: () => string;
  /** Called before the error when the deadline passes (to kill it). */
  giveUp?: () => void;
}

/**
 * Waits until a Relay started on `port` answers: as long as it takes, up to the start-up deadline
 * (startup-deadline.ts); fails at once when the process exits first.
 */
export const waitUntilAnswering = async (port: number, readiness: Readiness): Promise<void> => {
  const ceiling = startupDeadlineMs();
  const deadline = Date.now() + ceiling;
  const ready = (readiness.waitFor ?? 'health') === 'health' ? () => healthAnswers(port) : () => portAccepts(port);
  for (;;) {
    const ended = readiness.ended();
    if (ended !== null) throw new Error(`relay exited with ${ended} before answering:\n${readiness.output()}`);
    if (await ready()) return;
    if (Date.now() > deadline) {
      readiness.giveUp?.();
      throw new Error(`relay did not answer within ${ceiling} ms (RELAY_TEST_STARTUP_MS):\n${readiness.output()}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
};

/** Starts `relay start` as its own OS process on a free port and waits until it answers. */
export const startRelayProcess = async (options: StartOptions = {}): Promise<RelayProcess> => {
  const dataDir = options.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'relay-e2e-'));
  const port = await freePort();
  const env: Record<string, string> = {
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    SQLITE_SYNCHRONOUS: 'normal',
    ...eventStoreEnv(dataDir),
    ...brokerEnv(dataDir),
    ...options.env,
  };
  const child = spawn(process.execPath, [BIN, 'start', '--role', options.role ?? 'all'], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const url = `http://127.0.0.1:${port}`;
  await waitUntilAnswering(port, {
    waitFor: options.waitFor ?? 'health',
    ended: () => child.exitCode ?? child.signalCode,
    output: () => output,
    giveUp: () => child.kill('SIGKILL'),
  });
  return {
    url,
    port,
    dataDir,
    env,
    child,
    output: () => output,
    cli: (args) => runCli(args, env),
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
    kill: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
    },
    cleanup: async () => {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (env.EVENT_STORE === 'postgres') await dropSchema(env.DATABASE_URL!, env.DATABASE_SCHEMA!);
    },
  };
};
