import { createRequire } from 'node:module';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { nextEpoch, SESSION_PAUSE_MS, useFetchSessions } from './fetch-sessions.ts';

/**
 * The session logic against kafkajs's own Broker.fetch, with the request it builds captured and
 * the broker's answers scripted (the rules: apache/kafka core/src/main/scala/kafka/server/FetchSession.scala;
 * the same fetches against a real broker: kafka-broker.contract.spec.ts).
 */
const require = createRequire(import.meta.url);
const Broker = require('kafkajs/src/broker/index.js') as { prototype: object };
const sendRequest = Object.getOwnPropertySymbols(Broker.prototype).find((symbol) => symbol.description === 'private:Broker:sendRequest')!;

interface Sent {
  sessionId?: number;
  sessionEpoch?: number;
  topics: Array<{ topic: string; partitions: Array<{ partition: number; fetchOffset: string }> }>;
  forgottenTopics?: Array<{ topic: string; partitions: number[] }>;
}
type Answer = { errorCode?: number; sessionId?: number; responses: Array<{ topicName: string; partitions: unknown[] }> } | Error;

let port = 9000;
const fakeBroker = (clientId: string, apiVersion = 11, address = { host: 'broker', port: port++ }) => {
  const sent: Sent[] = [];
  const answers: Answer[] = [];
  const broker = Object.create(Broker.prototype) as Record<string | symbol, unknown> & { fetch(args: unknown): Promise<{ responses: unknown[] }> };
  broker.connectionPool = { clientId, ...address };
  broker.lookupRequest = () => (options: Sent) => {
    sent.push(options);
    return { request: { apiVersion } };
  };
  broker[sendRequest] = async () => {
    const answer = answers.shift() ?? { errorCode: 0, sessionId: 0, responses: [] };
    if (answer instanceof Error) throw answer;
    return answer;
  };
  return { broker, sent, answers };
};

const wants = (offsets: Record<string, string>) => {
  const topics = new Map<string, Array<{ partition: number; fetchOffset: string; maxBytes: number }>>();
  for (const [key, fetchOffset] of Object.entries(offsets)) {
    const [topic, partition] = key.split(':') as [string, string];
    if (!topics.has(topic)) topics.set(topic, []);
    topics.get(topic)!.push({ partition: Number(partition), fetchOffset, maxBytes: 1_048_576 });
  }
  return { maxWaitTime: 1_000, topics: [...topics].map(([topic, partitions]) => ({ topic, partitions })) };
};
const named = (s: Sent) => s.topics.flatMap(({ topic, partitions }) => partitions.map((p) => `${topic}:${p.partition}@${p.fetchOffset}`)).sort();
const forgotten = (s: Sent) => (s.forgottenTopics ?? []).flatMap(({ topic, partitions }) => partitions.map((p) => `${topic}:${p}`)).sort();

describe('kafkajs fetches with a session (fetch-sessions.ts, KIP-227)', () => {
  afterEach(() => vi.useRealTimers());
  useFetchSessions('with-sessions');

  it('a full fetch opens the session; then each fetch names only what changed and what to forget, with the next epoch', async () => {
    const { broker, sent, answers } = fakeBroker('with-sessions');
    answers.push({ errorCode: 0, sessionId: 42, responses: [{ topicName: 'a', partitions: [{ partition: 0 }] }] });
    const first = await broker.fetch(wants({ 'a:0': '0', 'b:0': '5', 'c:0': '7' }));
    expect(first.responses).toHaveLength(1);
    expect(sent[0]).toMatchObject({ sessionId: 0, sessionEpoch: 0, forgottenTopics: [] });
    expect(named(sent[0]!)).toEqual(['a:0@0', 'b:0@5', 'c:0@7']);

    // Idle: nothing changed, nothing named.
    await broker.fetch(wants({ 'a:0': '0', 'b:0': '5', 'c:0': '7' }));
    expect(sent[1]).toMatchObject({ sessionId: 42, sessionEpoch: 1, topics: [], forgottenTopics: [] });

    // a:0 moved on, c:0 paused (left out by kafkajs), d:0 followed.
    await broker.fetch(wants({ 'a:0': '3', 'b:0': '5', 'd:0': '0' }));
    expect(sent[2]).toMatchObject({ sessionId: 42, sessionEpoch: 2 });
    expect(named(sent[2]!)).toEqual(['a:0@3', 'd:0@0']);
    expect(forgotten(sent[2]!)).toEqual(['c:0']);

    // c:0 resumed at the offset it had: named again, since the session forgot it.
    await broker.fetch(wants({ 'a:0': '3', 'b:0': '5', 'c:0': '7', 'd:0': '0' }));
    expect(sent[3]).toMatchObject({ sessionId: 42, sessionEpoch: 3, forgottenTopics: [] });
    expect(named(sent[3]!)).toEqual(['c:0@7']);
  });

  it('a session the broker lost (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) or a failed request: the next fetch is full, closing the old session', async () => {
    const { broker, sent, answers } = fakeBroker('with-sessions');
    const want = wants({ 'a:0': '1', 'b:0': '2' });
    answers.push({ errorCode: 0, sessionId: 7, responses: [] }, { errorCode: 71, sessionId: 0, responses: [{ topicName: 'a', partitions: [{}] }] });
    await broker.fetch(want);
    // The error's answer hands kafkajs nothing: the consumer fetches again at once.
    expect((await broker.fetch(want)).responses).toEqual([]);
    answers.push({ errorCode: 0, sessionId: 8, responses: [] });
    await broker.fetch(want);
    expect(sent[2]).toMatchObject({ sessionId: 7, sessionEpoch: 0 });
    expect(named(sent[2]!)).toEqual(['a:0@1', 'b:0@2']);
    await broker.fetch(want);
    expect(sent[3]).toMatchObject({ sessionId: 8, sessionEpoch: 1, topics: [] });

    answers.push({ errorCode: 70, sessionId: 0, responses: [] });
    await broker.fetch(want);
    answers.push({ errorCode: 0, sessionId: 9, responses: [] });
    await broker.fetch(want);
    expect(sent[5]).toMatchObject({ sessionId: 8, sessionEpoch: 0 });
    expect(named(sent[5]!)).toEqual(['a:0@1', 'b:0@2']);

    answers.push(new Error('connection closed'));
    await expect(broker.fetch(want)).rejects.toThrow('connection closed');
    await broker.fetch(want);
    expect(sent[7]).toMatchObject({ sessionId: 9, sessionEpoch: 0 });
    expect(named(sent[7]!)).toEqual(['a:0@1', 'b:0@2']);
  });

  it('a broker that keeps no session (answers session id 0) gets full fetches, each asking for one', async () => {
    const { broker, sent } = fakeBroker('with-sessions');
    const want = wants({ 'a:0': '1' });
    await broker.fetch(want);
    await broker.fetch(want);
    expect(sent.map((s) => [s.sessionId, s.sessionEpoch, named(s)])).toEqual([
      [0, 0, ['a:0@1']],
      [0, 0, ['a:0@1']],
    ]);
  });

  it('another top-level error: fetches go without a session (as kafkajs sends them) for a while, then try again', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { broker, sent, answers } = fakeBroker('with-sessions');
    const want = wants({ 'a:0': '1' });
    answers.push({ errorCode: 0, sessionId: 3, responses: [] }, { errorCode: 35 /* UNSUPPORTED_VERSION */, responses: [] });
    await broker.fetch(want);
    await broker.fetch(want);
    await broker.fetch(want);
    expect(sent[2]).not.toHaveProperty('sessionEpoch');
    vi.setSystemTime(Date.now() + SESSION_PAUSE_MS + 1);
    await broker.fetch(want);
    expect(sent[3]).toMatchObject({ sessionId: 3, sessionEpoch: 0 });
  });

  it('other clients, brokers below Fetch v7, and a fetch while one is in flight go as kafkajs sends them', async () => {
    const other = fakeBroker('without-sessions');
    await other.broker.fetch(wants({ 'a:0': '1' }));
    expect(other.sent[0]).not.toHaveProperty('sessionEpoch');

    const old = fakeBroker('with-sessions', 6);
    await old.broker.fetch(wants({ 'a:0': '1' }));
    expect(old.sent.map((s) => s.sessionEpoch)).toEqual([0, undefined]);

    const busy = fakeBroker('with-sessions');
    const waiting: Array<() => void> = [];
    busy.broker[sendRequest] = () => new Promise((resolve) => waiting.push(() => resolve({ errorCode: 0, sessionId: 5, responses: [] })));
    const both = Promise.all([busy.broker.fetch(wants({ 'a:0': '1' })), busy.broker.fetch(wants({ 'a:0': '1' }))]);
    await vi.waitFor(() => expect(waiting).toHaveLength(2));
    for (const release of waiting) release();
    await both;
    expect(busy.sent.map((s) => s.sessionEpoch)).toEqual([0, undefined]);
  });

  it('a consumer that replaces another of the client (a restart) goes on with its session at that broker: it names only what differs', async () => {
    const address = { host: 'broker', port: 1 };
    const before = fakeBroker('with-sessions', 11, address);
    before.answers.push({ errorCode: 0, sessionId: 11, responses: [] });
    await before.broker.fetch(wants({ 'a:0': '1', 'b:0': '2' }));
    const after = fakeBroker('with-sessions', 11, address);
    await after.broker.fetch(wants({ 'a:0': '1', 'b:0': '2', 'c:0': '0' }));
    expect(after.sent[0]).toMatchObject({ sessionId: 11, sessionEpoch: 1, forgottenTopics: [] });
    expect(named(after.sent[0]!)).toEqual(['c:0@0']);
    // Another broker of the cluster has a session of its own.
    const other = fakeBroker('with-sessions', 11, { host: 'broker', port: 2 });
    await other.broker.fetch(wants({ 'd:0': '0' }));
    expect(other.sent[0]).toMatchObject({ sessionId: 0, sessionEpoch: 0 });
  });

  it('a client whose sessions were taken back fetches as kafkajs does', async () => {
    const end = useFetchSessions('taken-back');
    const { broker, sent } = fakeBroker('taken-back');
    await broker.fetch(wants({ 'a:0': '1' }));
    end();
    await broker.fetch(wants({ 'a:0': '1' }));
    expect(sent.map((s) => s.sessionEpoch)).toEqual([0, undefined]);
  });

  it('the epoch after 2^31 - 1 is 1', () => {
    expect(nextEpoch(1)).toBe(2);
    expect(nextEpoch(2_147_483_647)).toBe(1);
  });
});
