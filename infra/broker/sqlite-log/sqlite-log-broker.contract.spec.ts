import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { brokerContract } from '../../../test/contracts/broker-port.contract.ts';
import { createSqliteLogBroker } from './sqlite-log-broker.ts';

const tempFile = () => path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'relay-broker-')), 'broker.db');

brokerContract('embedded SQLite log', async () => {
  const file = tempFile();
  const broker = createSqliteLogBroker({ path: file, synchronous: 'normal' });
  return {
    broker,
    capabilities: { dedupesById: true },
    second: async () => createSqliteLogBroker({ path: file, synchronous: 'normal' }),
    teardown: async () => {
      await broker.close();
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    },
  };
});

describe('embedded SQLite log', () => {
  it('keeps what a publish resolved when the process is killed right after', () => {
    const file = tempFile();
    const script = `
      import { createSqliteLogBroker } from ${JSON.stringify(path.resolve('infra/broker/sqlite-log/sqlite-log-broker.ts'))};
      const broker = createSqliteLogBroker({ path: ${JSON.stringify(file)}, synchronous: 'normal' });
      await broker.publish(Array.from({ length: 50 }, (_, i) => ({ topic: 'inbound.app', value: String(i), id: 'm' + i })));
      process.kill(process.pid, 'SIGKILL');
    `;
    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8' });
    expect(child.signal).toBe('SIGKILL');
    const reopened = createSqliteLogBroker({ path: file });
    return reopened
      .pop('inbound.app', 100)
      .then((records) => expect(records.map((r) => r.value)).toEqual(Array.from({ length: 50 }, (_, i) => String(i))))
      .finally(() => reopened.close());
  });
});
