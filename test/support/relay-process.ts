import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';

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
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
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
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`relay exited with ${child.exitCode} before answering:\n${output}`);
    try {
      if ((options.waitFor ?? 'health') === 'health') {
        const res = await fetch(`${url}/api/v1/health`);
        if (res.status === 200) break;
      } else {
        await new Promise<void>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1', () => {
            socket.end();
            resolve();
          });
          socket.on('error', reject);
        });
        break;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`relay did not answer within 30 s:\n${output}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
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
