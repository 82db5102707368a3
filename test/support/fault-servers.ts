import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { ROOT, freePort } from './relay-process.ts';
import { CuttableProxy } from './tcp-cut.ts';

const run = promisify(execFile);

/**
 * Servers of one fault test alone (test/faults/, issue 48), so that stopping or cutting them
 * disturbs no other suite: a Kafka whose clients can be cut off one at a time, and a PostgreSQL
 * cluster of its own.
 */

export interface KafkaSlot {
  /** What an instance given this slot sets as KAFKA_BROKERS: its proxy, which the broker advertises to it. */
  readonly brokers: string;
  readonly proxy: CuttableProxy;
}

export interface OwnKafka {
  /** Straight to the broker (for the CLI and the test's admin client). */
  readonly brokers: string;
  readonly slots: readonly KafkaSlot[];
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops the broker, closes the proxies, removes its data. */
  close(): Promise<void>;
}

/**
 * A single-node Kafka from scripts/kafka-local.sh on free ports, with a listener per slot behind a
 * CuttableProxy: the listener advertises the proxy's port, so a client that bootstraps through the
 * proxy reaches the broker through it alone, and cutting the proxy cuts that client off.
 */
export const startOwnKafka = async (slots: number): Promise<OwnKafka> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-fault-kafka-'));
  const port = await freePort();
  const ports = await Promise.all(Array.from({ length: slots }, async () => ({ listen: await freePort(), advertised: await freePort() })));
  const env = {
    ...process.env,
    KAFKA_PORT: String(port),
    KAFKA_CONTROLLER_PORT: String(await freePort()),
    KAFKA_DATA_DIR: dir,
    KAFKA_HEAP_OPTS: '-Xms128m -Xmx384m',
    KAFKA_EXTRA_LISTENERS: ports.map((p, i) => `SLOT${i}:${p.listen}:${p.advertised}`).join(' '),
  };
  const script = (command: 'start' | 'stop') => run(path.join(ROOT, 'scripts/kafka-local.sh'), [command], { env, timeout: 180_000 }).then(() => undefined);
  await script('start');
  const proxies: CuttableProxy[] = [];
  try {
    for (const p of ports) proxies.push(await CuttableProxy.start({ port: p.listen }, p.advertised));
  } catch (error) {
    await script('stop');
    throw error;
  }
  return {
    brokers: `127.0.0.1:${port}`,
    slots: proxies.map((proxy) => ({ brokers: `127.0.0.1:${proxy.port}`, proxy })),
    stop: () => script('stop'),
    start: () => script('start'),
    close: async () => {
      for (const proxy of proxies) await proxy.close();
      await script('stop');
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
};

export interface OwnPostgres {
  /** A connection URL (database `postgres`, trust). */
  readonly url: string;
  readonly port: number;
  stop(): Promise<void>;
  start(): Promise<void>;
  /** Stops and drops the cluster. */
  close(): Promise<void>;
}

/**
 * A PostgreSQL cluster of its own (pg_createcluster, Debian's tools, as root), on a free port, with
 * trust authentication: restarted by the test without touching the cluster other suites use. Where
 * the tools are missing, `available` says why.
 */
export const postgresTools = async (): Promise<{ available: true; version: string } | { available: false; reason: string }> => {
  try {
    const versions = fs.readdirSync('/etc/postgresql');
    if (versions.length === 0) return { available: false, reason: 'no PostgreSQL under /etc/postgresql' };
    for (const tool of ['/usr/bin/pg_createcluster', '/usr/bin/pg_ctlcluster', '/usr/bin/pg_dropcluster']) fs.accessSync(tool, fs.constants.X_OK);
    if (process.getuid?.() !== 0) return { available: false, reason: 'pg_createcluster needs root' };
    return { available: true, version: versions.sort().at(-1)! };
  } catch (error) {
    return { available: false, reason: `Debian's PostgreSQL tools are not usable: ${String(error)}` };
  }
};

export const startOwnPostgres = async (version: string): Promise<OwnPostgres> => {
  const name = `relayfault${randomBytes(3).toString('hex')}`;
  const port = await freePort();
  const ctl = (command: string, ...extra: string[]) => run('pg_ctlcluster', ['--skip-systemctl-redirect', version, name, command, ...extra], { timeout: 120_000 }).then(() => undefined);
  await run('pg_createcluster', [version, name, '-p', String(port), '--', '--auth=trust'], { timeout: 120_000 });
  try {
    await ctl('start');
  } catch (error) {
    await run('pg_dropcluster', ['--stop', version, name]).catch(() => undefined);
    throw error;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    // Fast shutdown: open sessions are ended at once, as a restart by an operator does.
    stop: () => ctl('stop', '-m', 'fast'),
    start: () => ctl('start'),
    close: () => run('pg_dropcluster', ['--stop', version, name], { timeout: 120_000 }).then(() => undefined),
  };
};
