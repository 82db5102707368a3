import { describe, expect, it } from 'vitest';
import { FetchSession, nextEpoch, SESSION_PAUSE_MS, type FetchPlan, type SessionPartition } from './fetch-session.ts';

/**
 * The session rules given the partitions a broker fetcher holds, and the broker's answers scripted
 * (the rules: apache/kafka core/src/main/scala/kafka/server/FetchSession.scala; the same fetches
 * against a real broker: kafka-broker.contract.spec.ts).
 */
interface P extends SessionPartition {
  next: bigint;
  paused: boolean;
}
const part = (name: string, next: bigint): P => {
  const [topic, partition] = name.split(':') as [string, string];
  return { topic, partition: Number(partition), next, paused: false };
};
const named = (plan: FetchPlan<P>) => plan.topics.flatMap(({ topic, partitions }) => partitions.map((p) => `${topic}:${p.partition}@${p.fetchOffset}`)).sort();
const forgotten = (plan: FetchPlan<P>) => plan.forgottenTopics.flatMap(({ topic, partitions }) => partitions.map((p) => `${topic}:${p}`)).sort();
const V11 = 11;

describe('a fetch session with one broker (fetch-session.ts, KIP-227)', () => {
  it('a full fetch opens the session; then each fetch names only what changed and what to forget, with the next epoch', () => {
    const session = new FetchSession<P>();
    const [a, b, c] = [part('a:0', 0n), part('b:0', 5n), part('c:0', 7n)];
    const members = new Set([a, b, c]);
    const first = session.plan(members, V11, 0);
    expect(first).toMatchObject({ sessionId: 0, sessionEpoch: 0, full: true, forgottenTopics: [] });
    expect(named(first)).toEqual(['a:0@0', 'b:0@5', 'c:0@7']);
    session.answered(first, 0, 42, 0);

    // Idle: nothing changed, nothing named.
    const idle = session.plan(members, V11, 0);
    expect(idle).toMatchObject({ sessionId: 42, sessionEpoch: 1, topics: [], forgottenTopics: [], full: false });
    session.answered(idle, 0, 42, 0);

    // a:0 moved on, c:0 paused, d:0 added.
    a.next = 3n;
    c.paused = true;
    const d = part('d:0', 0n);
    members.add(d);
    const moved = session.plan(members, V11, 0);
    expect(moved).toMatchObject({ sessionId: 42, sessionEpoch: 2 });
    expect(named(moved)).toEqual(['a:0@3', 'd:0@0']);
    expect(forgotten(moved)).toEqual(['c:0']);
    session.answered(moved, 0, 42, 0);

    // c:0 resumed at the offset it had: named again, since the session forgot it; b:0 removed.
    c.paused = false;
    members.delete(b);
    const resumed = session.plan(members, V11, 0);
    expect(resumed).toMatchObject({ sessionId: 42, sessionEpoch: 3 });
    expect(named(resumed)).toEqual(['c:0@7']);
    expect(forgotten(resumed)).toEqual(['b:0']);
    session.answered(resumed, 0, 42, 0);
    expect(session.plan(members, V11, 0)).toMatchObject({ sessionEpoch: 4, topics: [], forgottenTopics: [] });
  });

  it('a partition read anew under a new object (its topic deleted and made again) is named, not also forgotten; then the session holds only the new one', () => {
    const session = new FetchSession<P>();
    const old = part('a:0', 9n);
    const members = new Set([old]);
    const first = session.plan(members, V11, 0);
    session.answered(first, 0, 5, 0);
    members.delete(old);
    const fresh = part('a:0', 0n);
    members.add(fresh);
    const again = session.plan(members, V11, 0);
    expect(named(again)).toEqual(['a:0@0']);
    expect(again.forgottenTopics).toEqual([]);
    session.answered(again, 0, 5, 0);
    expect(session.plan(members, V11, 0)).toMatchObject({ topics: [], forgottenTopics: [] });
  });

  it('a session the broker lost (FETCH_SESSION_ID_NOT_FOUND, INVALID_FETCH_SESSION_EPOCH) or a failed request: the next fetch is full, closing the old session', () => {
    const session = new FetchSession<P>();
    const members = new Set([part('a:0', 1n), part('b:0', 2n)]);
    session.answered(session.plan(members, V11, 0), 0, 7, 0);
    session.answered(session.plan(members, V11, 0), 71, 0, 0);
    const full = session.plan(members, V11, 0);
    expect(full).toMatchObject({ sessionId: 7, sessionEpoch: 0, full: true });
    expect(named(full)).toEqual(['a:0@1', 'b:0@2']);
    session.answered(full, 0, 8, 0);
    expect(session.plan(members, V11, 0)).toMatchObject({ sessionId: 8, sessionEpoch: 1, topics: [] });

    session.answered(session.plan(members, V11, 0), 70, 0, 0);
    const again = session.plan(members, V11, 0);
    expect(again).toMatchObject({ sessionId: 8, sessionEpoch: 0 });
    session.answered(again, 0, 9, 0);

    session.plan(members, V11, 0);
    session.failed();
    const afterFailure = session.plan(members, V11, 0);
    expect(afterFailure).toMatchObject({ sessionId: 9, sessionEpoch: 0 });
    expect(named(afterFailure)).toEqual(['a:0@1', 'b:0@2']);
  });

  it('a broker that keeps no session (answers session id 0) gets full fetches, each asking for one', () => {
    const session = new FetchSession<P>();
    const members = new Set([part('a:0', 1n)]);
    for (let i = 0; i < 2; i++) {
      const plan = session.plan(members, V11, 0);
      expect([plan.sessionId, plan.sessionEpoch, named(plan)]).toEqual([0, 0, ['a:0@1']]);
      session.answered(plan, 0, 0, 0);
    }
  });

  it('another top-level error: fetches go without a session (id 0, epoch -1, everything named) for a while, then ask for one again', () => {
    const session = new FetchSession<P>();
    const members = new Set([part('a:0', 1n)]);
    session.answered(session.plan(members, V11, 0), 0, 3, 0);
    session.answered(session.plan(members, V11, 0), 35 /* UNSUPPORTED_VERSION */, 0, 1_000);
    const without = session.plan(members, V11, 2_000);
    expect(without).toMatchObject({ sessionId: 0, sessionEpoch: -1, sessionless: true });
    expect(named(without)).toEqual(['a:0@1']);
    session.answered(without, 0, 0, 2_000);
    expect(session.plan(members, V11, 1_000 + SESSION_PAUSE_MS + 1)).toMatchObject({ sessionId: 3, sessionEpoch: 0, full: true });
  });

  it('a broker below Fetch v7 is always sent every partition without a session', () => {
    const session = new FetchSession<P>();
    const members = new Set([part('a:0', 1n)]);
    for (let i = 0; i < 2; i++) {
      const plan = session.plan(members, 6, 0);
      expect(plan).toMatchObject({ sessionId: 0, sessionEpoch: -1 });
      expect(named(plan)).toEqual(['a:0@1']);
      session.answered(plan, 0, 0, 0);
    }
  });

  it('the epoch after 2^31 - 1 is 1', () => {
    expect(nextEpoch(1)).toBe(2);
    expect(nextEpoch(2_147_483_647)).toBe(1);
  });
});
