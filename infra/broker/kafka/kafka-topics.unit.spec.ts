import type { Admin } from 'kafkajs';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { LazyClient } from './kafka-clients.ts';
import { KafkaTopics } from './kafka-topics.ts';

/** An admin whose listing names `listed` (a unit test of KafkaTopics alone: no broker). */
const fakeAdmin = (listed: Set<string>) => {
  const calls = { listTopics: 0 };
  const admin = {
    listTopics: async () => {
      calls.listTopics += 1;
      return [...listed];
    },
    createTopics: async ({ topics }: { topics: { topic: string }[] }) => {
      for (const { topic } of topics) listed.add(topic);
      return true;
    },
  } as unknown as Admin;
  const client: LazyClient<Admin> = { get: async () => admin, reset: () => undefined, close: async () => undefined };
  return { client, calls };
};

afterEach(() => vi.useRealTimers());

/** Whether the topic is known to be absent now. */
const knownAbsent = (topics: KafkaTopics, topic: string) => {
  const now = Date.now();
  return topics.absentUntil(topic, now) > now;
};

describe('KafkaTopics.absentUntil', () => {
  it('says a topic is absent only while a listing asked at most 200 ms ago did not name it, and never for one it created or after a forget', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const listed = new Set(['inbound.a']);
    const { client, calls } = fakeAdmin(listed);
    const topics = new KafkaTopics({ admin: client, policy: () => ({ partitions: 1 }), maxMessageBytes: 1_000_000 });
    // No listing yet: not known.
    expect(knownAbsent(topics, 'inbound.b')).toBe(false);
    expect(await topics.exists('inbound.b')).toBe(false);
    expect(calls.listTopics).toBe(1);
    expect([knownAbsent(topics, 'inbound.b'), knownAbsent(topics, 'inbound.a')]).toEqual([true, false]);
    // Another process creates it: the listing is still young enough that exists() would not ask, so absent.
    listed.add('inbound.b');
    vi.advanceTimersByTime(100);
    expect(knownAbsent(topics, 'inbound.b')).toBe(true);
    expect(await topics.exists('inbound.b')).toBe(false);
    // Older than 200 ms: unknown until a new listing, which names it.
    vi.advanceTimersByTime(101);
    expect(knownAbsent(topics, 'inbound.b')).toBe(false);
    expect(await topics.exists('inbound.b')).toBe(true);
    expect(calls.listTopics).toBe(2);
    // One this process creates is known at once.
    await topics.ensure(['inbound.c']);
    expect(knownAbsent(topics, 'inbound.c')).toBe(false);
    // After a forget (a topic deleted), nothing is absent until the next listing.
    topics.forget(['inbound.c']);
    expect(knownAbsent(topics, 'inbound.x')).toBe(false);
    expect(await topics.exists('inbound.x')).toBe(false);
    expect(knownAbsent(topics, 'inbound.x')).toBe(true);
  });

  it('lists again once its listing is half as old, so that polls asking all along keep their answer, one listing at a time', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const listed = new Set(['inbound.a']);
    const { client, calls } = fakeAdmin(listed);
    const topics = new KafkaTopics({ admin: client, policy: () => ({ partitions: 1 }), maxMessageBytes: 1_000_000 });
    const settled = () => new Promise((resolve) => setImmediate(resolve));
    await topics.exists('inbound.b');
    expect(calls.listTopics).toBe(1);
    // Younger than half the window: no listing.
    vi.advanceTimersByTime(100);
    expect(knownAbsent(topics, 'inbound.b')).toBe(true);
    await settled();
    expect(calls.listTopics).toBe(1);
    // Older: a topic known to exist needs no listing for its answer.
    vi.advanceTimersByTime(1);
    expect(knownAbsent(topics, 'inbound.a')).toBe(false);
    await settled();
    expect(calls.listTopics).toBe(1);
    // One not known: the answer stands, and one listing starts, however often it is asked meanwhile.
    expect([knownAbsent(topics, 'inbound.b'), knownAbsent(topics, 'inbound.b')]).toEqual([true, true]);
    await settled();
    expect(calls.listTopics).toBe(2);
    // Past the first listing's 200 ms, the second one's answer holds; and it learnt a topic made elsewhere meanwhile.
    listed.add('inbound.c');
    vi.advanceTimersByTime(150);
    expect(knownAbsent(topics, 'inbound.b')).toBe(true);
    await settled();
    expect(calls.listTopics).toBe(3);
    expect(knownAbsent(topics, 'inbound.c')).toBe(false);
    // Nobody asks for a while: the window closes, and nothing lists by itself.
    vi.advanceTimersByTime(1_000);
    await settled();
    expect(calls.listTopics).toBe(3);
    expect(knownAbsent(topics, 'inbound.b')).toBe(false);
  });

  it('says until when its answer holds: no later than the next listing is due (so a remembered answer asks again in time), and 0 once the window closed or after a forget', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const { client } = fakeAdmin(new Set(['inbound.a']));
    const topics = new KafkaTopics({ admin: client, policy: () => ({ partitions: 1 }), maxMessageBytes: 1_000_000 });
    expect(await topics.exists('inbound.b')).toBe(false);
    const listedAt = Date.now();
    expect(topics.absentUntil('inbound.b', Date.now())).toBe(listedAt + 101);
    expect(topics.absentUntil('inbound.a', Date.now())).toBe(0);
    const forgotten = topics.forgotten;
    topics.forget(['inbound.z']);
    expect(topics.forgotten).toBe(forgotten + 1);
    expect(topics.absentUntil('inbound.b', Date.now())).toBe(0);
  });
});

