import { createRequire } from 'node:module';
import type { Message } from 'kafkajs';
import { describe, expect, it } from 'vitest';
import { toKafkaMessage } from './kafka-records.ts';
import { encodedBytes, produceRequests, type OutgoingMessage } from './produce-requests.ts';

// kafkajs's own encoder of a record in a v2 batch, to check the bound against.
const encodeRecord = createRequire(import.meta.url)('kafkajs/src/protocol/recordBatch/record/v0') as (record: {
  offsetDelta: number;
  timestampDelta: number;
  key: Buffer | null;
  value: Buffer;
  headers: Record<string, Buffer>;
}) => { buffer: Buffer };

const encodedByKafkajs = (message: Message, offsetDelta: number): number =>
  encodeRecord({
    offsetDelta,
    timestampDelta: 2 ** 40, // as far as a batch's timestamps can spread
    key: message.key === null || message.key === undefined ? null : Buffer.from(message.key),
    value: Buffer.from(message.value as string),
    headers: Object.fromEntries(Object.entries(message.headers ?? {}).map(([name, value]) => [name, Buffer.from(value as string)])),
  }).buffer.length;

const outgoing = (topic: string, bytes: number, n: number): OutgoingMessage => {
  const message = toKafkaMessage({ topic, key: `k${n}`, value: 'v'.repeat(bytes), headers: { n: String(n) }, id: `m${n}` });
  return { topic, message, bytes: encodedBytes(message) };
};

describe('produce requests', () => {
  it('encodedBytes is never below what kafkajs writes for the record, and close to it', () => {
    const cases: Message[] = [
      toKafkaMessage({ topic: 't', value: '' }),
      toKafkaMessage({ topic: 't', key: 'clé', value: 'x'.repeat(200), headers: { a: 'b', ünï: 'çødé' }, id: 'id', dueAt: Date.now() }),
      toKafkaMessage({ topic: 't', key: 'k', value: 'é'.repeat(70_000), id: 'm1' }),
      toKafkaMessage({ topic: 't', value: 'y'.repeat(1024 * 1024), headers: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`h${i}`, 'v'.repeat(i)])) }),
    ];
    for (const message of cases) {
      const actual = encodedByKafkajs(message, 2 ** 20);
      expect(encodedBytes(message)).toBeGreaterThanOrEqual(actual);
      expect(encodedBytes(message) - actual).toBeLessThanOrEqual(36 + 10 * Object.keys(message.headers ?? {}).length);
    }
  });

  it('cuts a publish into consecutive requests of at most the bound, a larger record alone, keeping the order per topic', () => {
    const messages = [
      outgoing('a', 250, 0), // about 320 bytes each with key, headers and framing
      outgoing('b', 250, 1),
      outgoing('a', 250, 2),
      outgoing('a', 5000, 3), // over the bound: alone
      outgoing('b', 100, 4),
      outgoing('a', 100, 5),
    ];
    const requests = produceRequests(messages, 1024);
    const numbers = (request: (typeof requests)[number]) =>
      request.map(({ topic, messages: list }) => [topic, list.map((m) => Number((m.headers as Record<string, string>).n))]);
    expect(requests.map(numbers)).toEqual([
      [
        ['a', [0, 2]],
        ['b', [1]],
      ],
      [['a', [3]]],
      [
        ['b', [4]],
        ['a', [5]],
      ],
    ]);
    for (const request of requests) {
      const bytes = request.flatMap((r) => r.messages).reduce((sum, m) => sum + encodedBytes(m), 0);
      expect(bytes <= 1024 || request.flatMap((r) => r.messages).length === 1).toBe(true);
    }
    expect(produceRequests([], 1024)).toEqual([]);
  });

  it('a publish of thousands of records stays within the bound in every request', () => {
    const messages = Array.from({ length: 5000 }, (_, n) => outgoing(`t${n % 3}`, 50 + ((n * 37) % 400), n));
    const requests = produceRequests(messages, 64 * 1024);
    expect(requests.flatMap((r) => r.flatMap((t) => t.messages)).length).toBe(5000);
    for (const request of requests) expect(request.flatMap((r) => r.messages).reduce((sum, m) => sum + encodedBytes(m), 0)).toBeLessThanOrEqual(64 * 1024);
    for (const topic of ['t0', 't1', 't2']) {
      const order = requests.flatMap((r) => r.filter((t) => t.topic === topic).flatMap((t) => t.messages.map((m) => Number((m.headers as Record<string, string>).n))));
      expect(order).toEqual([...order].sort((x, y) => x - y));
      expect(order).toHaveLength(topic === 't2' ? 1666 : 1667);
    }
  });
});
