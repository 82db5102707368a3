import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { compareSnapshots } from '../snapshot-comparison.ts';
import { StatisticsProjection } from './statistics-projection.ts';

let position = 0n;
const recorded = (streamName: string, type: string, data: unknown): RecordedEvent => {
  position += 1n;
  return { id: `e${position}`, type, data, metadata: {}, streamName, streamVersion: 1n, globalPosition: position, recordedAt: new Date(0) };
};

/** Never to be found in the statistics: what the sealed parts of the events stand for. */
const SECRET = 'contact +15550123 said hello';
const T = (iso: string) => new Date(iso).toISOString();
const NOW = Date.parse('2026-03-01T12:00:30.000Z');
/** `minutes` before NOW. */
const ago = (minutes: number) => new Date(NOW - minutes * 60_000).toISOString();

const appCreated = (appId: string, userId: string) =>
  recorded(`app-${appId}`, 'AppCreated', {
    appId, userId, name: appId, protocol: ['signal', 'simplex'], status: 'active', deliveryType: 'poll', webhookUrl: null, webhookAuthType: null,
    webhookAuthSecretEncrypted: null, webhookAuthHeaderName: null, apiKeyId: null, createdAt: T('2026-01-01T00:00:00.000Z'),
  });
const appDeleted = (appId: string, userId: string) => recorded(`app-${appId}`, 'AppDeleted', { appId, userId, deletedAt: ago(0) });
let batches = 0;
const accepted = (appId: string, messenger: string, messageIds: string[], at: string) => {
  batches += 1;
  return recorded(`sendbatch-b${batches}`, 'MessagesAccepted', {
    batchId: `b${batches}`, credentialId: 'cred_1', userId: 'usr_1', acceptedAt: at,
    messages: messageIds.map((messageId) => ({ messageId, appId, messenger, keyId: 'k1' })),
    bodies: [{ keyId: 'k1', appId, sealed: SECRET }],
  });
};
const delivered = (messageId: string, appId: string, messenger: string, attempt: number, at: string) =>
  recorded(`outbound-${messageId}`, 'MessageDelivered', { messageId, appId, messenger, attempt, deliveredAt: at });
const failed = (messageId: string, appId: string, messenger: string, attempt: number, at: string, then: 'retry' | 'give up') =>
  recorded(`outbound-${messageId}`, 'DeliveryAttemptFailed', {
    messageId, appId, messenger, batchId: 'b', keyId: 'k1', attempt, reason: 'connector down', permanent: false, failedAt: at,
    ...(then === 'retry' ? { retry: { attempt: attempt + 1, dueAt: at } } : {}),
  });
const deferred = (messageId: string, appId: string, messenger: string, attempt: number, at: string) =>
  recorded(`outbound-${messageId}`, 'DeliveryDeferred', { messageId, appId, messenger, batchId: 'b', keyId: 'k1', attempt, reason: 'no identity', deferredAt: at, retry: { attempt, dueAt: at } });
const abandoned = (messageId: string, appId: string, messenger: string, attempts: number, at: string) =>
  recorded(`outbound-${messageId}`, 'MessageAbandoned', { messageId, appId, messenger, attempts, reason: 'gave up', abandonedAt: at });
const received = (messageId: string, appId: string, messenger: string, at: string) =>
  recorded(`inbound-${messageId}`, 'InboundMessageReceived', {
    messageId, appId, appMessengerId: 'am_1', messenger, keyId: 'k1', sealed: SECRET, timestamp: 1, isGroupMessage: false, isCommand: false, receivedAt: at,
  });

const ids = (prefix: string, from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `${prefix}${from + i}`);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const fed = (events: RecordedEvent[], statistics = new StatisticsProjection()) => {
  for (const event of events) statistics.apply(event);
  return statistics;
};

describe('statistics read model: figures and gauges', () => {
  // N accepted, M delivered, K failed (messages), A abandoned, on app_1's signal; a little on simplex.
  const N = 20;
  const M = 10;
  const K = 7;
  const A = 3;
  const workload = [
    appCreated('app_1', 'usr_1'),
    accepted('app_1', 'signal', ids('s', 1, N), ago(30)),
    accepted('app_1', 'simplex', ids('x', 1, 5), ago(30)),
    // s1–s8 delivered at once.
    ...ids('s', 1, 8).map((id) => delivered(id, 'app_1', 'signal', 1, ago(29))),
    // s9–s14 fail their first attempt; s9 and s10 are then delivered, s11 fails twice more and is
    // given up, s12 fails again, s13 and s14 wait for their retry (s13 deferred: its bot is away).
    ...ids('s', 9, 14).map((id) => failed(id, 'app_1', 'signal', 1, ago(28), 'retry')),
    delivered('s9', 'app_1', 'signal', 2, ago(27)),
    delivered('s10', 'app_1', 'signal', 2, ago(27)),
    failed('s11', 'app_1', 'signal', 2, ago(27), 'retry'),
    failed('s11', 'app_1', 'signal', 3, ago(26), 'give up'),
    abandoned('s11', 'app_1', 'signal', 3, ago(26)),
    failed('s12', 'app_1', 'signal', 2, ago(27), 'retry'),
    deferred('s13', 'app_1', 'signal', 2, ago(27)),
    // s15 fails for good at once (a contact id the messenger rejects); s16's bot never came.
    failed('s15', 'app_1', 'signal', 1, ago(25), 'give up'),
    abandoned('s15', 'app_1', 'signal', 1, ago(25)),
    deferred('s16', 'app_1', 'signal', 1, ago(20)),
    abandoned('s16', 'app_1', 'signal', 0, ago(10)),
    // s17–s20 not attempted yet; x1 delivered; two messages in.
    delivered('x1', 'app_1', 'simplex', 1, ago(29)),
    received('i1', 'app_1', 'signal', ago(5)),
    received('i2', 'app_1', 'signal', ago(4)),
  ];

  it('counts N accepted, M delivered, K failed, A abandoned; waiting and retrying are what is left', () => {
    const statistics = fed(workload);
    const signal = statistics.forApp('usr_1', 'app_1', 'hour', NOW)!.byMessenger.signal!.totals;
    expect(signal).toEqual({
      accepted: N,
      delivered: M,
      failed: K,
      // 6 first attempts, s11's second and third, s12's second, s15's only one.
      failedAttempts: 10,
      abandoned: A,
      received: 2,
      // s12, s13, s14, s17–s20.
      waiting: N - M - A,
      // s12, s13 (deferred after a failure), s14.
      retrying: 3,
    });
    const total = statistics.forUser('usr_1', 'hour', NOW).total.totals;
    expect(total).toEqual({ accepted: N + 5, delivered: M + 1, failed: K, failedAttempts: 10, abandoned: A, received: 2, waiting: N - M - A + 4, retrying: 3 });
    // The day says the same: everything happened within it.
    expect(statistics.forUser('usr_1', 'day', NOW).total.totals).toEqual(total);
  });

  it('puts each figure in the bucket of its time: the series add up to the totals', () => {
    const hour = fed(workload).forApp('usr_1', 'app_1', 'hour', NOW)!;
    expect(hour).toMatchObject({ window: 'hour', bucketMs: 60_000, from: '2026-03-01T11:01:00.000Z', to: '2026-03-01T12:01:00.000Z' });
    const series = hour.byMessenger.signal!.series;
    expect(series.accepted).toHaveLength(60);
    // 30 minutes ago is bucket 29 of 60 (the current minute is bucket 59).
    expect(series.accepted[29]).toBe(N);
    expect(series.delivered[30]).toBe(8);
    expect(series.delivered[32]).toBe(2);
    expect(series.abandoned[49]).toBe(1);
    for (const figure of ['accepted', 'delivered', 'failed', 'failedAttempts', 'abandoned', 'received'] as const) {
      expect(sum(series[figure])).toBe(hour.byMessenger.signal!.totals[figure]);
      expect(sum(hour.total.series[figure])).toBe(hour.total.totals[figure]);
    }
    const day = fed(workload).forApp('usr_1', 'app_1', 'day', NOW)!;
    expect(day).toMatchObject({ window: 'day', bucketMs: 300_000, from: '2026-02-28T12:05:00.000Z', to: '2026-03-01T12:05:00.000Z' });
    expect(day.total.series.accepted).toHaveLength(288);
    // 30 minutes before 12:00:30 is 11:30:30: the five minutes from 11:30, bucket 281 of 288.
    expect(day.total.series.accepted[281]).toBe(N + 5);
  });
});

describe('statistics read model: windows, pruning, tenants', () => {
  it('counts an event at the first millisecond of a window, not one a millisecond before', () => {
    const statistics = fed([
      appCreated('app_1', 'usr_1'),
      accepted('app_1', 'signal', ['a'], T('2026-03-01T11:00:59.999Z')),
      accepted('app_1', 'signal', ['b'], T('2026-03-01T11:01:00.000Z')),
      accepted('app_1', 'signal', ['c'], T('2026-03-01T12:00:59.999Z')),
      accepted('app_1', 'signal', ['d'], T('2026-02-28T12:04:59.999Z')),
      accepted('app_1', 'signal', ['e'], T('2026-02-28T12:05:00.000Z')),
    ]);
    const hour = statistics.forApp('usr_1', 'app_1', 'hour', NOW)!;
    expect(hour.total.totals.accepted).toBe(2);
    expect([hour.total.series.accepted[0], hour.total.series.accepted[59]]).toEqual([1, 1]);
    const day = statistics.forApp('usr_1', 'app_1', 'day', NOW)!;
    expect(day.total.totals.accepted).toBe(4);
    expect(day.total.series.accepted[0]).toBe(1);
    // Waiting is a gauge: every accepted message, whatever the window.
    expect(day.total.totals.waiting).toBe(5);
    // An hour later, the last hour is empty and the day has lost its first hour (e).
    expect(statistics.forApp('usr_1', 'app_1', 'hour', NOW + 3_600_000)!.total.totals.accepted).toBe(0);
    expect(statistics.forApp('usr_1', 'app_1', 'day', NOW + 3_600_000)!.total.totals.accepted).toBe(3);
  });

  it('drops buckets older than a tier keeps, ignores events older than that, and forgets idle app-messengers', () => {
    const t0 = Date.parse('2026-03-01T00:00:00.000Z');
    const at = (minutes: number) => new Date(t0 + minutes * 60_000).toISOString();
    const statistics = fed([
      appCreated('app_1', 'usr_1'),
      appCreated('app_2', 'usr_1'),
      accepted('app_1', 'signal', ['m1'], at(0)),
      accepted('app_2', 'simplex', ['q1'], at(0)),
      delivered('q1', 'app_2', 'simplex', 1, at(1)),
    ]);
    const stored = () => statistics.snapshot() as { counters: Array<{ id: string; waiting: number; buckets: Record<string, number[][]> }> };
    expect(stored().counters.map((c) => [c.id, Object.keys(c.buckets)])).toEqual([
      ['app_1/signal', ['minute', 'fiveMinutes']],
      ['app_2/simplex', ['minute', 'fiveMinutes']],
    ]);

    // Two hours later the minutes of t0 are gone, their five minutes kept.
    statistics.apply(accepted('app_1', 'signal', ['m2'], at(120)));
    const twoHours = stored().counters.find((c) => c.id === 'app_1/signal')!;
    expect(twoHours.buckets.minute!.map(([bucket]) => bucket)).toEqual([Math.floor((t0 + 120 * 60_000) / 60_000)]);
    expect(twoHours.buckets.fiveMinutes!.map(([bucket]) => bucket)).toEqual([t0 / 300_000, (t0 + 120 * 60_000) / 300_000]);

    // 28 hours later nothing of t0 or t0 + 2 h is left; app_2/simplex (nothing waiting) is forgotten, app_1/signal keeps its gauge.
    statistics.apply(accepted('app_1', 'signal', ['m3'], at(28 * 60)));
    expect(stored().counters.map((c) => [c.id, c.waiting, c.buckets.fiveMinutes!.length])).toEqual([['app_1/signal', 3, 1]]);
    // A late event older than 25 hours is not counted in any bucket (its gauge still moves).
    statistics.apply(accepted('app_1', 'signal', ['late'], at(30)));
    expect(stored().counters.map((c) => [c.id, c.waiting, c.buckets.fiveMinutes!.length])).toEqual([['app_1/signal', 4, 1]]);
    const now = t0 + 28 * 3_600_000;
    expect(statistics.forApp('usr_1', 'app_1', 'day', now)!.total.totals).toMatchObject({ accepted: 1, waiting: 4 });
    expect(statistics.forApp('usr_1', 'app_2', 'day', now)!.byMessenger).toEqual({});
  });

  it('frees the app-messengers that went quiet without a walk of them all, and keeps those with messages waiting', () => {
    const t0 = Date.parse('2026-03-01T00:00:00.000Z');
    const at = (minutes: number) => new Date(t0 + minutes * 60_000).toISOString();
    const events = [appCreated('app_w', 'usr_1')];
    for (let i = 0; i < 300; i++) {
      events.push(appCreated(`app_${i}`, 'usr_1'));
      events.push(accepted(`app_${i}`, 'signal', [`m${i}`], at(i)));
      events.push(delivered(`m${i}`, `app_${i}`, 'signal', 1, at(i)));
    }
    events.push(accepted('app_w', 'session', ['w1'], at(0)));
    const statistics = fed(events);
    expect(statistics.counterCount).toBe(301);
    // At 26 h the five-minute tier keeps its 300 buckets from minute 65 on: the 65 counted before went
    // quiet and are freed, the rest (and the one waiting, and the new one) stay.
    statistics.apply(accepted('app_w', 'simplex', ['w2'], at(26 * 60)));
    expect(statistics.counterCount).toBe(300 - 65 + 2);
    // Days later: what still waits (session), and what counted within 25 hours (signal); simplex, quiet since day 3 with nothing waiting, is gone.
    statistics.apply(delivered('w2', 'app_w', 'simplex', 1, at(3 * 24 * 60)));
    statistics.apply(accepted('app_w', 'signal', ['w3'], at(3 * 24 * 60)));
    statistics.apply(delivered('w3', 'app_w', 'signal', 1, at(5 * 24 * 60)));
    expect(statistics.counterCount).toBe(2);
    const stored = statistics.snapshot() as { counters: Array<{ id: string; waiting: number }> };
    expect(stored.counters.map((c) => [c.id, c.waiting]).sort()).toEqual([
      ['app_w/session', 1],
      ['app_w/signal', 0],
    ]);
  });

  it("never shows one user's apps to another", () => {
    const statistics = fed([
      appCreated('app_1', 'usr_1'),
      appCreated('app_9', 'usr_2'),
      accepted('app_1', 'signal', ['m1'], ago(3)),
      accepted('app_9', 'signal', ids('z', 1, 50), ago(3)),
      received('i1', 'app_9', 'simplex', ago(2)),
    ]);
    const mine = statistics.forUser('usr_1', 'day', NOW);
    expect(Object.keys(mine.apps)).toEqual(['app_1']);
    expect(Object.keys(mine.byMessenger)).toEqual(['signal']);
    expect(mine.total.totals).toMatchObject({ accepted: 1, received: 0, waiting: 1 });
    expect(statistics.forApp('usr_1', 'app_9', 'day', NOW)).toBeUndefined();
    expect(statistics.forApp('usr_1', 'app_unknown', 'day', NOW)).toBeUndefined();
    expect(statistics.forApp('usr_2', 'app_9', 'day', NOW)!.total.totals).toMatchObject({ accepted: 50, received: 1 });
    expect(statistics.forUser('usr_3', 'hour', NOW).total.totals.accepted).toBe(0);
  });

  it("a deleted app's statistics go with it, and its late outcomes count for nobody", () => {
    const statistics = fed([
      appCreated('app_1', 'usr_1'),
      appCreated('app_2', 'usr_1'),
      accepted('app_1', 'signal', ['m1'], ago(3)),
      accepted('app_2', 'signal', ['m2', 'm3'], ago(3)),
      appDeleted('app_2', 'usr_1'),
      abandoned('m2', 'app_2', 'signal', 0, ago(1)),
    ]);
    expect(statistics.forApp('usr_1', 'app_2', 'hour', NOW)).toBeUndefined();
    expect(statistics.forUser('usr_1', 'hour', NOW).total.totals).toMatchObject({ accepted: 1, abandoned: 0, waiting: 1 });
    expect((statistics.snapshot() as { counters: Array<{ id: string }> }).counters.map((c) => c.id)).toEqual(['app_1/signal']);
  });

  it('holds counts only: no body, contact or message id reaches its snapshot or its answers', () => {
    const statistics = fed([appCreated('app_1', 'usr_1'), accepted('app_1', 'signal', ['msg_secret_id'], ago(3)), received('inb_secret_id', 'app_1', 'signal', ago(2))]);
    const text = JSON.stringify([statistics.snapshot(), statistics.forUser('usr_1', 'day', NOW), statistics.forApp('usr_1', 'app_1', 'hour', NOW)]);
    for (const secret of [SECRET, 'msg_secret_id', 'inb_secret_id', 'k1']) expect(text).not.toContain(secret);
  });
});

describe('statistics read model: snapshots and rebuilds', () => {
  const history = () => [
    appCreated('app_1', 'usr_1'),
    appCreated('app_2', 'usr_2'),
    accepted('app_1', 'signal', ids('m', 1, 30), ago(24 * 60 + 30)),
    ...ids('m', 1, 10).map((id) => delivered(id, 'app_1', 'signal', 1, ago(24 * 60 + 29))),
    accepted('app_2', 'simplex', ids('n', 1, 5), ago(90)),
    ...ids('m', 11, 15).map((id) => failed(id, 'app_1', 'signal', 1, ago(80), 'retry')),
    received('i1', 'app_1', 'session', ago(61)),
    ...ids('m', 11, 13).map((id) => delivered(id, 'app_1', 'signal', 2, ago(59))),
    accepted('app_1', 'signal', ids('p', 1, 3), ago(1)),
  ];

  it('a snapshot restored, then the events after it, equals the rebuild from event 0', () => {
    const events = history();
    for (let cut = 0; cut <= events.length; cut += 3) {
      const before = fed(events.slice(0, cut));
      const live = new StatisticsProjection();
      live.restore(JSON.parse(JSON.stringify(before.snapshot())));
      fed(events.slice(cut), live);
      const rebuilt = fed(events);
      expect(compareSnapshots('statistics', live.snapshot(), rebuilt.snapshot()).equal, `cut at ${cut}`).toBe(true);
      expect(live.forUser('usr_1', 'day', NOW)).toEqual(rebuilt.forUser('usr_1', 'day', NOW));
      expect(live.forApp('usr_2', 'app_2', 'hour', NOW)).toEqual(rebuilt.forApp('usr_2', 'app_2', 'hour', NOW));
    }
  });

  it('a rebuild report names what differs', () => {
    const live = fed(history());
    const tampered = JSON.parse(JSON.stringify(live.snapshot())) as { counters: Array<{ id: string; waiting: number }> };
    tampered.counters.find((c) => c.id === 'app_1/signal')!.waiting += 1;
    const report = compareSnapshots('statistics', tampered, fed(history()).snapshot());
    expect(report).toMatchObject({ equal: false, live: { apps: 2, counters: 3, clocks: 1 }, different: { count: 1, items: [{ id: 'counters/app_1/signal', fields: ['waiting'] }] } });
  });
});

describe('statistics read model: listeners', () => {
  const flushed = () => new Promise<void>((resolve) => queueMicrotask(resolve));

  it("tells a user's listeners once per applied batch, with the apps that changed, and only their own", async () => {
    const statistics = fed([appCreated('app_1', 'usr_1'), appCreated('app_2', 'usr_1'), appCreated('app_9', 'usr_2')]);
    const heard: unknown[] = [];
    const subscribed = statistics.onChange('usr_1', (change) => heard.push(change));
    expect(subscribed.ok).toBe(true);
    fed([accepted('app_1', 'signal', ['m1', 'm2'], ago(1)), delivered('m1', 'app_1', 'signal', 1, ago(0)), received('i1', 'app_2', 'simplex', ago(0)), accepted('app_9', 'signal', ['z'], ago(0))], statistics);
    expect(heard).toEqual([]);
    await flushed();
    expect(heard).toEqual([{ userId: 'usr_1', appIds: ['app_1', 'app_2'] }]);
    // Another user's traffic: nothing.
    fed([accepted('app_9', 'signal', ['z2'], ago(0))], statistics);
    await flushed();
    expect(heard).toHaveLength(1);
    // Unsubscribed: nothing more.
    if (subscribed.ok) subscribed.unsubscribe();
    fed([accepted('app_1', 'signal', ['m3'], ago(0))], statistics);
    await flushed();
    expect(heard).toHaveLength(1);
    expect(statistics.listenerCount).toBe(0);
  });

  it('refuses an eleventh listener of a user, and listeners beyond the total; a throwing listener harms no other', async () => {
    const errors: unknown[] = [];
    const statistics = new StatisticsProjection({ listeners: { perUser: 10, total: 12 }, onListenerError: (error) => errors.push(error) });
    fed([appCreated('app_1', 'usr_1')], statistics);
    let heard = 0;
    const first = statistics.onChange('usr_1', () => {
      throw new Error('page gone');
    });
    for (let i = 1; i < 10; i++) expect(statistics.onChange('usr_1', () => (heard += 1)).ok).toBe(true);
    expect(statistics.onChange('usr_1', () => undefined)).toEqual({ ok: false, reason: 'too-many-for-user' });
    expect(statistics.onChange('usr_2', () => undefined).ok).toBe(true);
    expect(statistics.onChange('usr_3', () => undefined).ok).toBe(true);
    expect(statistics.onChange('usr_4', () => undefined)).toEqual({ ok: false, reason: 'too-many' });
    fed([accepted('app_1', 'signal', ['m1'], ago(0))], statistics);
    await flushed();
    expect([heard, errors.length]).toEqual([9, 1]);
    // A place freed is a place taken again.
    if (first.ok) first.unsubscribe();
    expect(statistics.onChange('usr_4', () => undefined).ok).toBe(true);
    expect(statistics.listenerCount).toBe(12);
  });

  it('tells of a deleted app too', async () => {
    const statistics = fed([appCreated('app_1', 'usr_1')]);
    const heard: unknown[] = [];
    statistics.onChange('usr_1', (change) => heard.push(change));
    statistics.apply(appDeleted('app_1', 'usr_1'));
    await flushed();
    expect(heard).toEqual([{ userId: 'usr_1', appIds: ['app_1'] }]);
  });
});
