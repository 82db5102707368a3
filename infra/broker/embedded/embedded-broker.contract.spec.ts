import Database from 'better-sqlite3';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { brokerContract } from '../../../test/contracts/broker.contract.ts';
import { BrokerUnavailableError, RecordTooLargeError, type Broker, type ConsumedRecord, type Consumer } from '../port.ts';
import { createEmbeddedBroker, type EmbeddedBrokerOptions } from './embedded-broker.ts';
import { eventually } from '../../../test/support/eventually.ts';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));
const tempDirs: string[] = [];
const tempFile = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-embedded-broker-'));
  tempDirs.push(dir);
  return path.join(dir, 'broker.db');
};

brokerContract('embedded SQLite log', async ({ topicPolicy }) => {
  const file = tempFile();
  // Retention runs every 50 ms, so that the suite's short retention shows at once.
  const open = () => createEmbeddedBroker({ path: file, synchronous: 'normal', topicPolicy, retentionIntervalMs: 50 });
  const broker = open();
  return {
    broker,
    capabilities: { dedupesById: true },
    second: async () => open(),
    teardown: async () => {
      await broker.close();
      fs.rmSync(path.dirname(file), { recursive: true, force: true });
    },
  };
});

/** Starts a fixture in its own Node process; `lines` collects what it prints. */
const startChild = (script: string, args: string[]) => {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ['--import', 'tsx', fixture(script), ...args], { cwd: repoRoot });
  const lines: string[] = [];
  let stderr = '';
  let partial = '';
  child.stdout.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString()).split('\n');
    partial = parts.pop()!;
    lines.push(...parts);
  });
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stderr: string }>((resolve) =>
    child.on('close', (code, signal) => resolve({ code, signal, stderr })),
  );
  return { child, lines, exited };
};

describe('embedded SQLite log', () => {
  const open: Broker[] = [];
  const consumers: Consumer[] = [];
  const openBroker = (options: Omit<EmbeddedBrokerOptions, 'path'> & { path?: string } = {}) => {
    const broker = createEmbeddedBroker({ synchronous: 'normal', ...options, path: options.path ?? tempFile() });
    open.push(broker);
    return broker;
  };
  const collect = async (broker: Broker, groupId: string, topics: string[]) => {
    const seen: ConsumedRecord[] = [];
    consumers.push(await broker.consume({ groupId, topics, handler: async (records) => void seen.push(...records) }));
    return seen;
  };
  const values = (records: ConsumedRecord[]) => records.map((r) => r.value);
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    await Promise.all(open.splice(0).map((broker) => broker.close()));
    for (const dir of tempDirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('wakes its consumers at once on a publish of another thread of this process', async () => {
    const file = tempFile();
    const seen = await collect(openBroker({ path: file, pollIntervalMs: 600_000 }), 'g', ['outbound.t']);
    const worker = new Worker(new URL('./fixtures/publish-in-thread.mjs', import.meta.url), { workerData: { file } });
    try {
      await new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject));
      // Without the signal this would wait for the 10-minute poll of data_version.
      await eventually(() => expect(values(seen)).toEqual(['from a thread']), 1000);
    } finally {
      worker.postMessage('close');
      await new Promise((resolve) => worker.once('exit', resolve));
    }
  });

  it('an empty pop is remembered until a record may have come: a publish here, one through another connection, a record falling due', async () => {
    const file = tempFile();
    // data_version is looked at every 10 minutes only: what is seen here comes from the publishes and the signal.
    const here = openBroker({ path: file, pollIntervalMs: 600_000 });
    const there = openBroker({ path: file, pollIntervalMs: 600_000 });
    // What it remembers is what `knownEmpty` says, without a pop.
    expect(here.knownEmpty!('inbound.a')).toBe(false);
    expect(await here.pop('inbound.a', 10)).toEqual([]);
    expect(here.knownEmpty!('inbound.a')).toBe(true);
    expect(here.knownEmpty!('inbound.b')).toBe(false);
    await here.publish([{ topic: 'inbound.a', value: 'mine' }]);
    expect(here.knownEmpty!('inbound.a')).toBe(false);
    expect(values(await here.pop('inbound.a', 10))).toEqual(['mine']);
    expect(await here.pop('inbound.a', 10)).toEqual([]);
    expect(here.knownEmpty!('inbound.a')).toBe(true);
    await there.publish([{ topic: 'inbound.a', value: 'theirs' }]);
    // Their commit signal names the topic: seen as soon as it arrives.
    await eventually(async () => expect(here.knownEmpty!('inbound.a')).toBe(false), 2000);
    const got: string[] = [];
    await eventually(async () => {
      got.push(...values(await here.pop('inbound.a', 10)));
      expect(got).toEqual(['theirs']);
    }, 2000);
    // A record not due yet: nothing now, and the remembered "nothing" ends when it falls due.
    await there.publish([{ topic: 'inbound.a', value: 'later', dueAt: Date.now() + 300 }]);
    await eventually(async () => expect(await there.depth('inbound.a')).toBe(1));
    expect(await here.pop('inbound.a', 10)).toEqual([]);
    expect(here.knownEmpty!('inbound.a')).toBe(true);
    await eventually(async () => expect(here.knownEmpty!('inbound.a')).toBe(false), 5000);
    const later: string[] = [];
    await eventually(async () => {
      later.push(...values(await here.pop('inbound.a', 10)));
      expect(later).toEqual(['later']);
    }, 5000);
  });

  /** A broker here remembers an empty pop; another process publishes 50 records; they are popped here. */
  const forgetsWhenAnotherProcessPublishes = async (options: Omit<EmbeddedBrokerOptions, 'path'>) => {
    const file = tempFile();
    const here = openBroker({ ...options, path: file });
    expect(await here.pop('inbound.crash', 100)).toEqual([]);
    const { lines, exited } = startChild('publish-and-die.ts', [file, 'once']);
    expect((await exited).stderr).toBe('');
    expect(lines).toEqual(['published']);
    const got: string[] = [];
    await eventually(async () => {
      got.push(...values(await here.pop('inbound.crash', 100)));
      expect(got).toHaveLength(50);
    }, 5000);
  };

  it('an empty pop remembered here is forgotten when another process publishes, within the poll interval', () =>
    forgetsWhenAnotherProcessPublishes({ pollIntervalMs: 50 }));

  // Idle looks every 10 minutes: within the test, the watch makes it look (or, where the file
  // could not be watched, the busy polling it falls back to: commit-watch.integration.spec.ts
  // tests the watch itself).
  it('an empty pop remembered here is forgotten when another process publishes, by a watch of the -wal file when it looks seldom otherwise', () =>
    forgetsWhenAnotherProcessPublishes({ pollIntervalMs: 25, idlePollIntervalMs: 600_000 }));

  it('keeps what a publish resolved when the process is SIGKILLed right after', async () => {
    const file = tempFile();
    const { lines, exited } = startChild('publish-and-die.ts', [file, 'once']);
    const { signal, stderr } = await exited;
    expect(stderr).toBe('');
    expect(signal).toBe('SIGKILL');
    expect(lines).toEqual(['published']);
    const reopened = openBroker({ path: file });
    const popped = await reopened.pop('inbound.crash', 100);
    expect(values(popped)).toEqual(Array.from({ length: 50 }, (_, n) => JSON.stringify({ n })));
    expect(popped.map((r) => r.offset)).toEqual(Array.from({ length: 50 }, (_, n) => BigInt(n)));
  });

  it('a process killed while publishing leaves every acknowledged batch, whole, seen live by a consumer here', async () => {
    const file = tempFile();
    const broker = openBroker({ path: file });
    const seen = await collect(broker, 'live', ['outbound.crash']);
    const { child, lines, exited } = startChild('publish-and-die.ts', [file, 'stream']);
    await eventually(() => expect(lines.length).toBeGreaterThanOrEqual(20));
    child.kill('SIGKILL');
    expect(await exited).toMatchObject({ code: null, signal: 'SIGKILL', stderr: '' });
    const acknowledged = lines.length;
    const reopened = openBroker({ path: file });
    const total = await reopened.depth('outbound.crash');
    await eventually(() => expect(seen).toHaveLength(total));
    const all = await reopened.pop('outbound.crash', 100_000);
    expect(all.length % 10).toBe(0);
    expect(all.length).toBeGreaterThanOrEqual(acknowledged * 10);
    expect(values(all)).toEqual(all.map((_, k) => JSON.stringify({ batch: Math.floor(k / 10), i: k % 10 })));
    expect(values(seen)).toEqual(values(all));
  });

  it("a group member's lease dies with its process: another member takes over at once", async () => {
    const file = tempFile();
    const broker = openBroker({ path: file, groupLeaseMs: 60_000 });
    await broker.publish(['0', '1', '2'].map((value) => ({ topic: 'outbound.lease', value })));
    const { child, lines, exited } = startChild('consume-and-die.ts', [file, 'outbound.lease', 'delivery']);
    await eventually(() => expect(lines).toEqual(['committed 3']));
    const blocked = await collect(broker, 'delivery', ['outbound.lease']);
    await broker.publish([{ topic: 'outbound.lease', value: '3' }]);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(blocked).toEqual([]); // the live child holds the topic
    child.kill('SIGKILL');
    await exited;
    const startedAt = Date.now();
    await broker.publish([{ topic: 'outbound.lease', value: '4' }]);
    await eventually(() => expect(values(blocked)).toEqual(['3', '4']), 5000);
    expect(Date.now() - startedAt).toBeLessThan(5000);
  });

  it('retention deletes old records only once every group committed past them, and forgets old ids', async () => {
    const broker = openBroker({ retentionMs: 1500, idRetentionMs: 1500, retentionIntervalMs: 20 });
    const topic = 'outbound.kept';
    await broker.publish(['0', '1', '2'].map((value, n) => ({ topic, value, id: `r${n}` })));
    const a = await collect(broker, 'a', [topic]);
    const b = await collect(broker, 'b', [topic]);
    await eventually(() => expect([a.length, b.length]).toEqual([3, 3]));
    await consumers.pop()!.stop(); // b stays at offset 3
    await broker.publish(['3', '4'].map((value) => ({ topic, value })));
    await eventually(() => expect(a).toHaveLength(5));
    expect(await broker.depth(topic)).toBe(5);
    await broker.publish([{ topic: 'inbound.unconsumed', value: 'kept', id: 'once' }]);
    const onceAt = Date.now();

    await eventually(async () => expect(await broker.depth(topic)).toBe(2));
    const fresh = await collect(broker, 'fresh', [topic]);
    await eventually(() => expect(values(fresh)).toEqual(['3', '4']));
    expect(fresh.map((r) => r.offset)).toEqual([3n, 4n]);

    await broker.publish([{ topic, value: '5' }]);
    const bAgain = await collect(broker, 'b', [topic]);
    await eventually(() => expect(values(bAgain)).toEqual(['3', '4', '5']));
    await eventually(() => expect(values(a)).toEqual(['0', '1', '2', '3', '4', '5']));
    await eventually(async () => expect(await broker.depth(topic)).toBe(1)); // 3 and 4 go; 5 is too young
    expect(await broker.depth(topic, 'a')).toBe(0);

    // no group consumes inbound.unconsumed: its record stays; its id is forgotten after the retention
    expect(await broker.depth('inbound.unconsumed')).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, onceAt + 1500 + 200 - Date.now()));
    await broker.publish([{ topic: 'inbound.unconsumed', value: 'again', id: 'once' }]);
    expect(values(await broker.pop('inbound.unconsumed', 10))).toEqual(['kept', 'again']);
    await broker.publish([{ topic, value: 'r0 again', id: 'r0' }]);
    await eventually(() => expect(values(a).at(-1)).toBe('r0 again'));
  });

  it('remembered ids are forgotten after the id window, and never before the longest retention of a topic', async () => {
    const longest = 1200;
    const broker = openBroker({
      retentionMs: 100,
      idRetentionMs: 100,
      retentionIntervalMs: 20,
      topicPolicy: (topic) => (topic === 'inbound.kept-long' ? { partitions: 1, retentionMs: longest } : { partitions: 1 }),
    });
    await broker.ensureTopics(['inbound.kept-long']);
    const publishedAt = Date.now();
    await broker.publish([{ topic: 'inbound.ids', value: 'first', id: 'same' }]);
    let forgottenAt = 0;
    await eventually(async () => {
      await broker.publish([{ topic: 'inbound.ids', value: 'again', id: 'same' }]);
      forgottenAt = Date.now();
      expect(await broker.depth('inbound.ids')).toBe(2);
    }, 10_000);
    // Kept at least as long as the longest retention (1200 ms), not the id window (100 ms).
    expect(forgottenAt - publishedAt).toBeGreaterThanOrEqual(longest);
    expect(values(await broker.pop('inbound.ids', 10))).toEqual(['first', 'again']);
  });

  it('retention works through a backlog of many chunks while publishes and pops go on', async () => {
    const broker = openBroker({
      retentionIntervalMs: 20,
      topicPolicy: (topic) => (topic.startsWith('expiring.') ? { partitions: 1, retentionMs: 300 } : { partitions: 1 }),
    });
    for (let i = 0; i < 6; i++) await broker.publish(Array.from({ length: 500 }, (_, n) => ({ topic: 'expiring.backlog', value: `${i}:${n}` })));
    expect(await broker.depth('expiring.backlog')).toBe(3000);
    const during: string[] = [];
    await eventually(async () => {
      await broker.publish([{ topic: 'inbound.live', value: String(during.length) }]);
      during.push(...values(await broker.pop('inbound.live', 10)));
      expect(await broker.depth('expiring.backlog')).toBe(0);
    });
    expect(during).toEqual(during.map((_, n) => String(n)));
    await broker.publish([{ topic: 'expiring.backlog', value: 'young' }]);
    expect(values(await broker.pop('expiring.backlog', 10))).toEqual(['young']);
  });

  it('consumed records go soon after every group committed past them; records of a topic nobody consumes stay', async () => {
    const broker = openBroker({ retentionMs: 200, retentionIntervalMs: 20 });
    await broker.publish(['0', '1', '2'].map((value) => ({ topic: 'outbound.soon', value })));
    await broker.publish([{ topic: 'inbound.stays', value: 'kept' }]);
    const seen = await collect(broker, 'delivery', ['outbound.soon']);
    await eventually(() => expect(values(seen)).toEqual(['0', '1', '2']));
    const consumedAt = Date.now();
    await eventually(async () => expect(await broker.depth('outbound.soon')).toBe(0), 5000);
    expect(Date.now() - consumedAt).toBeLessThan(5000);
    expect(await broker.depth('inbound.stays')).toBe(1);
  });

  it('deleteTopics clears group offsets and leases, and offsets are not reused after it', async () => {
    const file = tempFile();
    const broker = openBroker({ path: file });
    await broker.publish(['a', 'b', 'c'].map((value) => ({ topic: 'outbound.gone', value, id: value })));
    const seen = await collect(broker, 'delivery', ['outbound.gone']);
    await eventually(() => expect(values(seen)).toEqual(['a', 'b', 'c']));
    await consumers.pop()!.stop();
    await broker.deleteTopics(['outbound.gone']);
    const db = new Database(file, { readonly: true });
    try {
      const count = (table: string) => (db.prepare(`SELECT count(*) AS n FROM ${table} WHERE topic = ?`).get('outbound.gone') as { n: number }).n;
      expect([count('records'), count('record_ids'), count('group_offsets'), count('group_leases')]).toEqual([0, 0, 0, 0]);
    } finally {
      db.close();
    }
    await broker.publish([{ topic: 'outbound.gone', value: 'a', id: 'a' }]);
    const again = await collect(broker, 'delivery', ['outbound.gone']);
    await eventually(() => expect(again.map((r) => [r.value, r.offset])).toEqual([['a', 3n]]));
  });

  it('maxRecordBytes is an option: a publish with one record over it writes nothing', async () => {
    const broker = openBroker({ maxRecordBytes: 100 });
    expect(broker.maxRecordBytes).toBe(100);
    const error = await broker
      .publish([
        { topic: 'inbound.small', value: 'fits' },
        { topic: 'inbound.small', key: 'k', value: 'v'.repeat(90), headers: { name: 'value' }, id: 'id' },
      ])
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecordTooLargeError);
    expect(error).toMatchObject({ topic: 'inbound.small', bytes: 1 + 90 + 4 + 5 + 2, maxBytes: 100 });
    expect(await broker.depth('inbound.small')).toBe(0);
    await broker.publish([{ topic: 'inbound.small', key: 'k', value: 'v'.repeat(88), headers: { name: 'value' }, id: 'id' }]);
    expect(await broker.depth('inbound.small')).toBe(1);
    expect(() => openBroker({ maxRecordBytes: 0 })).toThrow(RangeError);
  });

  it('offsets start at 0 per topic, are dense, and are not reused after everything was popped', async () => {
    const broker = openBroker();
    await broker.publish([
      { topic: 'inbound.x', value: 'a' },
      { topic: 'inbound.y', value: 'b' },
      { topic: 'inbound.x', value: 'c' },
    ]);
    const x = await broker.pop('inbound.x', 10);
    expect(x.map((r) => [r.offset, r.partition, r.value])).toEqual([
      [0n, 0, 'a'],
      [1n, 0, 'c'],
    ]);
    await broker.publish([{ topic: 'inbound.x', value: 'd' }]);
    expect((await broker.pop('inbound.x', 10)).map((r) => r.offset)).toEqual([2n]);
    expect((await broker.pop('inbound.y', 10)).map((r) => r.offset)).toEqual([0n]);
  });

  it('a not-yet-due head record holds back the records after it on its own topic', async () => {
    const broker = openBroker();
    const dueAt = Date.now() + 300;
    await broker.publish([
      { topic: 'outbound.retry.1', value: 'late', dueAt },
      { topic: 'outbound.retry.1', value: 'after' },
    ]);
    const seen = await collect(broker, 'delivery', ['outbound.retry.1']);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(seen).toEqual([]);
    await eventually(() => expect(values(seen)).toEqual(['late', 'after']));
    expect(seen[0]!.dueAt).toBe(dueAt);
  });

  it('a locked database rejects with BrokerUnavailableError, and nothing is lost once it is free', async () => {
    const file = tempFile();
    const broker = openBroker({ path: file, busyTimeoutMs: 20 });
    const errors: unknown[] = [];
    const seen: string[] = [];
    consumers.push(
      await broker.consume({
        groupId: 'delivery',
        topics: ['outbound.lock'],
        handler: async (records) => void seen.push(...values(records)),
        onError: (error) => errors.push(error),
      }),
    );
    await broker.publish([{ topic: 'outbound.lock', value: 'before' }]);
    await eventually(() => expect(seen).toEqual(['before']));
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    await expect(broker.publish([{ topic: 'outbound.lock', value: 'x' }])).rejects.toBeInstanceOf(BrokerUnavailableError);
    await expect(broker.pop('inbound.lock', 1)).resolves.toEqual([]); // an empty poll takes no lock
    other.exec('COMMIT');
    other.close();
    await broker.publish([{ topic: 'outbound.lock', value: 'after' }]);
    await eventually(() => expect(seen).toEqual(['before', 'after']));
    expect(errors).toEqual([]);
  });

  it('a publish and a pop wait for a lock held by another connection without stopping the thread', async () => {
    const file = tempFile();
    const broker = openBroker({ path: file, busyTimeoutMs: 5000 });
    await broker.publish([{ topic: 'inbound.wait', value: 'first' }]);
    const other = new Database(file);
    other.exec('BEGIN IMMEDIATE');
    // Released by a timer of this thread: a thread asleep in SQLite's busy handler would never run it.
    const release = setTimeout(() => {
      other.exec('COMMIT');
      other.close();
    }, 100);
    try {
      const started = Date.now();
      const [, popped] = await Promise.all([broker.publish([{ topic: 'inbound.wait', value: 'second' }]), broker.pop('inbound.wait', 5)]);
      expect(Date.now() - started).toBeGreaterThanOrEqual(90);
      expect(values(popped)).toEqual(['first', 'second']);
    } finally {
      clearTimeout(release);
      if (other.open) other.close();
    }
  });

  it('a consumer whose commit fails reports it and hands the batch again', async () => {
    const file = tempFile();
    const broker = openBroker({ path: file, busyTimeoutMs: 20 });
    const errors: unknown[] = [];
    const seen: string[] = [];
    const other = new Database(file);
    await broker.publish([{ topic: 'outbound.commit', value: 'one' }]);
    let locked = false;
    consumers.push(
      await broker.consume({
        groupId: 'delivery',
        topics: ['outbound.commit'],
        handler: async (records) => {
          seen.push(...values(records));
          if (!locked) {
            other.exec('BEGIN IMMEDIATE'); // the commit after this batch fails
            locked = true;
          }
        },
        onError: (error) => {
          errors.push(error);
          if (other.inTransaction) other.exec('COMMIT');
        },
      }),
    );
    await eventually(() => expect(seen).toEqual(['one', 'one']));
    other.close();
    expect(errors).toHaveLength(1);
    expect(errors[0]).toBeInstanceOf(BrokerUnavailableError);
    await eventually(async () => expect(await broker.depth('outbound.commit', 'delivery')).toBe(0));
  });

  it('cannot be opened on a directory: BrokerUnavailableError', () => {
    const dir = path.dirname(tempFile());
    expect(() => createEmbeddedBroker({ path: dir })).toThrow(BrokerUnavailableError);
  });
});
