import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import type { Worker as WorkerType } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig } from '../services/config.ts';
import { startPipelineThread, type PipelineThread } from './pipeline-thread.ts';

// The real Worker class, recording each thread started, so that a test can end one as a crash would.
const workers = vi.hoisted(() => [] as WorkerType[]);
vi.mock('node:worker_threads', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:worker_threads')>();
  class RecordedWorker extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args);
      workers.push(this);
    }
  }
  return { ...actual, Worker: RecordedWorker, default: { ...actual, Worker: RecordedWorker } };
});

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
    const config = configFor({ PIPELINE_THREAD_HEAP_MB: '768' });
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
    // Its own heap, under its own limit: the configured old generation and its 8 MB young one
    // (V8 counts one and a half of it), not the process's default (a quarter of the machine's
    // memory, up to 4 GB).
    const heap = snapshots[0]!.find((metric) => metric.name === 'relay_thread_heap_bytes')!;
    const measure = (name: string) => heap.values.find((value) => value.labels.thread === 'pipeline' && value.labels.measure === name)!.value;
    const MB = 1024 * 1024;
    expect(measure('limit')).toBeGreaterThanOrEqual(768 * MB);
    expect(measure('limit')).toBeLessThanOrEqual((768 + 16) * MB);
    expect(measure('used')).toBeGreaterThan(0);
    expect(measure('total')).toBeGreaterThanOrEqual(measure('used'));
    await thread.stop();
    expect(await thread.metrics()).toEqual([]);
  });

  it.runIf(process.platform === 'linux')('runs at the configured nice value once it has started', async () => {
    const nices = () =>
      fs.readdirSync('/proc/self/task').map((task) => {
        const stat = fs.readFileSync(`/proc/self/task/${task}/stat`, 'utf8');
        return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
      });
    expect(nices()).not.toContain(7);
    const thread = await startPipelineThread(configFor({ PIPELINE_THREAD_NICE: '7' }), silent);
    started.push(thread);
    // One thread of this process, the pipeline's: lowered after its start (which ran at the
    // process's priority, not to be starved by the API thread's restore), before it said ready.
    expect(nices().filter((nice) => nice === 7)).toHaveLength(1);
  });

  it('takes a heap limit of at least 128 MB, 1 GB by default, and a young generation of 8 MB by default', () => {
    expect(configFor().PIPELINE_THREAD_HEAP_MB).toBe(1024);
    expect(() => configFor({ PIPELINE_THREAD_HEAP_MB: '100' })).toThrow(new ConfigError('Invalid configuration PIPELINE_THREAD_HEAP_MB="100": Too small: expected number to be >=128'));
    expect(configFor().PIPELINE_THREAD_YOUNG_MB).toBe(8);
    expect(() => configFor({ PIPELINE_THREAD_YOUNG_MB: '0' })).toThrow(new ConfigError('Invalid configuration PIPELINE_THREAD_YOUNG_MB="0": Too small: expected number to be >=1'));
  });

  it('runs with the configured young generation', async () => {
    const thread = await startPipelineThread(configFor({ PIPELINE_THREAD_HEAP_MB: '768', PIPELINE_THREAD_YOUNG_MB: '32' }), silent);
    started.push(thread);
    const heap = (await thread.metrics())[0]!.find((metric) => metric.name === 'relay_thread_heap_bytes')!;
    const limit = heap.values.find((value) => value.labels.thread === 'pipeline' && value.labels.measure === 'limit')!.value;
    // V8 counts one and a half of the young generation in the limit: 768 + 48 MB, not 768 + 12.
    expect(limit).toBeGreaterThanOrEqual((768 + 32) * 1024 * 1024);
    expect(limit).toBeLessThanOrEqual((768 + 64) * 1024 * 1024);
  });

  it('is scheduled at nice 19 by default, at another nice value from 0 to 19, or as SCHED_IDLE', () => {
    expect(configFor().PIPELINE_THREAD_NICE).toBe(19);
    expect(configFor({ PIPELINE_THREAD_NICE: '5' }).PIPELINE_THREAD_NICE).toBe(5);
    expect(configFor({ PIPELINE_THREAD_NICE: 'idle' }).PIPELINE_THREAD_NICE).toBe('idle');
    expect(() => configFor({ PIPELINE_THREAD_NICE: '20' })).toThrow(new ConfigError('Invalid configuration PIPELINE_THREAD_NICE="20": Too big: expected number to be <=19'));
    expect(() => configFor({ PIPELINE_THREAD_NICE: 'lowest' })).toThrow(
      new ConfigError('Invalid configuration PIPELINE_THREAD_NICE="lowest": must be idle or a nice value from 0 to 19'),
    );
  });

  it('refuses to start, with the configuration error, when its parts cannot start', async () => {
    const failure = await startPipelineThread(configFor({ SESSION_CLIENT_URL: 'http://127.0.0.1:1' }), silent).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ConfigError);
    expect((failure as Error).message).toBe('Invalid configuration SESSION_CLIENT_URL: the session daemon connector is not available in this version');
  });

  it('loads its code at once but opens its stores only when told to start; a start called off ends the thread', async () => {
    const config = configFor();
    workers.length = 0;
    let go!: () => void;
    const thread = startPipelineThread(config, silent, { startWhen: new Promise<void>((resolve) => (go = resolve)) });
    await vi.waitFor(() => expect(workers).toHaveLength(1));
    await new Promise((resolve) => workers[0]!.once('online', resolve));
    expect(fs.readdirSync(config.dataDir)).toEqual([]);
    go();
    started.push(await thread);
    expect(['events.db', 'broker.db', 'simulator.db'].every((file) => fs.existsSync(path.join(config.dataDir, file)))).toBe(true);

    const calledOff = new Error('the API could not start');
    const other = configFor();
    workers.length = 0;
    const refused = startPipelineThread(other, silent, { startWhen: Promise.reject(calledOff) }).catch((error: unknown) => error);
    expect(await refused).toBe(calledOff);
    await vi.waitFor(() => expect(workers[0]!.threadId).toBe(-1)); // ended
    expect(fs.readdirSync(other.dataDir)).toEqual([]);
  });

  it('starts a thread that died again, and stops the new one', async () => {
    const lines: Array<{ msg: string }> = [];
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as { msg: string }) });
    workers.length = 0;
    const thread = await startPipelineThread(configFor(), log, { restartDelayMs: 50 });
    started.push(thread);
    expect(workers).toHaveLength(1);
    await workers[0]!.terminate(); // ends it from outside, as a crash would
    await vi.waitFor(() => expect(lines.map((line) => line.msg)).toContain('the delivery pipeline thread runs again'), { timeout: 10_000 });
    expect(lines.map((line) => line.msg)).toContain('the delivery pipeline thread stopped; starting it again in 50 ms');
    expect(workers).toHaveLength(2);
    expect(await thread.metrics()).toHaveLength(1); // the new thread answers
    await thread.stop();
    expect(workers[1]!.threadId).toBe(-1); // exited
    expect(await thread.metrics()).toEqual([]);
  });
});
