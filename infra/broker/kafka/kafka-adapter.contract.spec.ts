import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ConfigResourceTypes, Kafka, logLevel } from 'kafkajs';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import type { EventStore } from '../../event-store/port.ts';
import { createSqliteEventStore } from '../../event-store/sqlite/sqlite-event-store.ts';
import { RecordTooLargeError, type Broker, type Consumer, type OutgoingRecord } from '../port.ts';
import { createEventStorePopCursors } from './event-store-pop-cursors.ts';
import { createKafkaBroker, type KafkaBrokerOptions } from './kafka-broker.ts';
import { eventually } from '../../../test/support/eventually.ts';

/**
 * What the Kafka adapter does beyond the contract, on the real broker: topics as the policy says,
 * publishes of any size, pop claims, and a start-up that does not wait for a dead member's session.
 */
const brokers = inject('kafkaBrokers');
const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));

describe.skipIf(brokers === '')('Kafka adapter', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-kafka-adapter-'));
  const store: EventStore = createSqliteEventStore({ path: path.join(dir, 'events.db'), pollIntervalMs: 5 });
  const admin = new Kafka({ clientId: 'relay-test', brokers: brokers.split(','), logLevel: logLevel.NOTHING }).admin();
  const opened: Broker[] = [];
  const consumers: Consumer[] = [];
  const open = (options: Partial<KafkaBrokerOptions> = {}) => {
    const broker = createKafkaBroker({ brokers: brokers.split(','), cursors: createEventStorePopCursors(store), ...options });
    opened.push(broker);
    return broker;
  };
  const unique = (name: string) => `${name}.${randomUUID().slice(0, 8)}`;
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((consumer) => consumer.stop()));
    await Promise.all(opened.splice(0).map((broker) => broker.close()));
  });
  afterAll(async () => {
    await admin.disconnect();
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('creates topics with the partitions and retention of their policy (by port name), and a max.message.bytes above maxRecordBytes', async () => {
    const prefix = `${unique('t')}.`;
    const policy = (topic: string) => (topic.startsWith('inbound.') ? { partitions: 1, retentionMs: 3_600_000 } : { partitions: 4 });
    const broker = open({ prefix, topicPolicy: policy });
    await broker.ensureTopics(['inbound.app', 'outbound.signal']);
    await broker.publish([{ topic: 'outbound.retry.1', value: 'x' }]);
    await admin.connect();
    const { topics } = await admin.fetchTopicMetadata({ topics: [`${prefix}inbound.app`, `${prefix}outbound.signal`, `${prefix}outbound.retry.1`] });
    expect(new Map(topics.map((t) => [t.name, t.partitions.length]))).toEqual(
      new Map([
        [`${prefix}inbound.app`, 1],
        [`${prefix}outbound.signal`, 4],
        [`${prefix}outbound.retry.1`, 4],
      ]),
    );
    const { resources } = await admin.describeConfigs({
      includeSynonyms: false,
      resources: [`${prefix}inbound.app`, `${prefix}outbound.signal`].map((name) => ({ type: ConfigResourceTypes.TOPIC, name })),
    });
    const config = (name: string, key: string) => resources.find((r) => r.resourceName === name)!.configEntries.find((e) => e.configName === key);
    expect(config(`${prefix}inbound.app`, 'retention.ms')).toMatchObject({ configValue: '3600000', isDefault: false });
    expect(config(`${prefix}inbound.app`, 'segment.ms')).toMatchObject({ configValue: '3600000', isDefault: false });
    expect(config(`${prefix}outbound.signal`, 'retention.ms')!.isDefault).toBe(true);
    // 1 MiB records, 512 KiB requests, 64 KiB for batch and request framing.
    expect(config(`${prefix}outbound.signal`, 'max.message.bytes')!.configValue).toBe(String(1024 * 1024 + 64 * 1024));
    await broker.deleteTopics(['inbound.app', 'outbound.signal', 'outbound.retry.1']);
  });

  it(
    'one publish of thousands of 50-100 KB records is sent in produce requests the broker takes, and all of them are consumed, in order per key',
    async () => {
      const broker = open();
      const topic = unique('outbound.big');
      const count = 3000;
      const size = (n: number) => 50_000 + ((n * 7919) % 50_000);
      const records: OutgoingRecord[] = Array.from({ length: count }, (_, n) => ({
        topic,
        key: `k${n % 7}`,
        value: `${n}:`.padEnd(size(n), 'v'),
        headers: { n: String(n) },
        id: `m${n}`,
      }));
      const totalBytes = records.reduce((sum, r) => sum + r.value.length, 0);
      expect(totalBytes).toBeGreaterThan(200 * 1024 * 1024);
      await broker.publish(records);

      // A record over the limit fails the whole publish before anything is sent.
      const over = await broker
        .publish([{ topic, key: 'k0', value: 'late' }, { topic, key: 'k1', value: 'z'.repeat(broker.maxRecordBytes) }])
        .catch((error: unknown) => error);
      expect(over).toBeInstanceOf(RecordTooLargeError);
      expect(over).toMatchObject({ topic, bytes: broker.maxRecordBytes + 2, maxBytes: broker.maxRecordBytes });
      expect(await broker.depth(topic)).toBe(count);

      const lastByKey = new Map<string, number>();
      let seen = 0;
      const disorder: string[] = [];
      consumers.push(
        await broker.consume({
          groupId: unique('g'),
          topics: [topic],
          handler: async (batch) => {
            for (const record of batch) {
              const n = Number(record.headers.n);
              if (record.value.length !== size(n) || !record.value.startsWith(`${n}:`)) disorder.push(`record ${n} changed`);
              if ((lastByKey.get(record.key!) ?? -1) >= n) disorder.push(`record ${n} after ${lastByKey.get(record.key!)}`);
              lastByKey.set(record.key!, n);
              seen++;
            }
          },
        }),
      );
      await eventually(() => expect(seen).toBeGreaterThanOrEqual(count), 90_000);
      expect(disorder).toEqual([]);
      expect(seen).toBe(count);
      expect(await broker.depth(topic)).toBe(count); // nothing of the refused publish was written
      await broker.deleteTopics([topic]);
    },
    240_000,
  );

  it('an accept that rejects claims nothing: the pop cursor stream has no event for it', async () => {
    const broker = open({ topicPolicy: () => ({ partitions: 1 }) });
    const topic = unique('inbound');
    await broker.publish([{ topic, value: 'a' }, { topic, value: 'b' }]);
    const refusal = new Error('cannot decrypt');
    await expect(broker.pop(topic, 10, { accept: () => Promise.reject(refusal) })).rejects.toBe(refusal);
    expect((await store.readStream(`popcursor-${topic}`)).version).toBe(0n);
    expect((await broker.pop(topic, 10, { accept: async () => {} })).map((r) => r.value)).toEqual(['a', 'b']);
    const { events } = await store.readStream(`popcursor-${topic}`);
    expect(events.map((e) => e.type)).toEqual(['RecordsPopped']);
    await broker.deleteTopics([topic]);
    expect((await store.readStream(`popcursor-${topic}`)).events.map((e) => e.type)).toEqual(['RecordsPopped', 'TopicDeleted']);
    await broker.deleteTopics([topic]); // once is enough
    expect((await store.readStream(`popcursor-${topic}`)).version).toBe(2n);
  });

  it(
    'after a member is SIGKILLed, consume() resolves at once and the new member gets the records once the dead one is gone; stop() during the join leaves no member behind',
    async () => {
      const topic = unique('outbound');
      const group = unique('delivery');
      const first = open({ topicPolicy: () => ({ partitions: 3 }) });
      expect(first.isReady()).toBe(false); // nothing answered yet
      await eventually(() => expect(first.isReady()).toBe(true), 5_000);
      await first.ensureTopics([topic]);
      await first.publish([{ topic, key: 'a', value: 'warm-up' }]);

      const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./fixtures/consume-and-die.ts', import.meta.url)), brokers, topic, group], {
        cwd: repoRoot,
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      const exited = new Promise((resolve) => child.on('close', resolve));
      let output = '';
      child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
      await eventually(() => expect(output).toContain('handled 1'), 30_000);
      await eventually(async () => expect(await first.depth(topic, group)).toBe(0)); // committed
      child.kill('SIGKILL');
      await exited;
      const killedAt = Date.now();
      await first.publish([{ topic, key: 'b', value: 'after the kill' }]);

      // A member that stops while its join waits for the dead member's session: it handles nothing
      // and leaves (a member left behind would hold partitions, and swallow the record below).
      const swallowed: string[] = [];
      const calling = Date.now();
      const early = await first.consume({ groupId: group, topics: [topic], handler: async (records) => void swallowed.push(...records.map((r) => r.value)) });
      expect(Date.now() - calling).toBeLessThan(2_000); // it used to wait for the join: about 10 s
      await early.stop();

      const got: string[] = [];
      consumers.push(await first.consume({ groupId: group, topics: [topic], handler: async (records) => void got.push(...records.map((r) => r.value)) }));
      await eventually(() => expect(got).toEqual(['after the kill']), 30_000);
      expect(swallowed).toEqual([]);
      // The dead member held its partitions until its session (6 s) ran out, not much longer.
      expect(Date.now() - killedAt).toBeLessThan(6_000 + 5_000);
    },
    90_000,
  );
});
