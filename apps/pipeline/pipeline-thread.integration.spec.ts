import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../shared/config.ts';
import { startPipelineThread, type PipelineThread } from './pipeline-thread.ts';

const dirs: string[] = [];
const started: PipelineThread[] = [];
const configFor = (env: Record<string, string> = {}) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-pipeline-'));
  dirs.push(dir);
  return loadConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', ...env });
};
const silent = pino({ level: 'silent' });

afterEach(async () => {
  await Promise.all(started.splice(0).map((thread) => thread.stop()));
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the delivery pipeline thread (role all)', () => {
  it('starts on the configured stores, answers for its counters, and stops', async () => {
    const config = configFor();
    const thread = await startPipelineThread(config, silent);
    started.push(thread);
    // Its stores exist: the thread opened the event store, the broker and the simulator.
    expect(['events.db', 'broker.db', 'simulator.db'].every((file) => fs.existsSync(path.join(config.dataDir, file)))).toBe(true);
    const snapshots = await thread.metrics();
    expect(snapshots).toHaveLength(1);
    const names = snapshots[0]!.map((metric) => metric.name);
    expect(names).toContain('relay_messages_delivered_total');
    // Process-wide metrics and scrape-time gauges are the API thread's, not repeated here.
    expect(names).not.toContain('relay_process_resident_memory_bytes');
    expect(names).not.toContain('relay_consumer_lag');
    await thread.stop();
    expect(await thread.metrics()).toEqual([]);
  });

  it('refuses to start, with the configuration error, when its parts cannot start', async () => {
    const failure = await startPipelineThread(configFor({ SIGNAL_CLI_URL: 'http://127.0.0.1:1' }), silent).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toBe('Invalid configuration SIGNAL_CLI_URL: the signal daemon connector is not available in this version');
  });
});
