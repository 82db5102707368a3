/**
 * The statistics step (issue 25, item 2): a day of a busy app folded into the statistics read
 * model, then the day's figures read as the statistics page reads them. Reports:
 * - the fold: how long `events` events (default 1,000,000 across 24 hours: a busy app on three
 *   messengers, four quieter apps of the same user, 100 other users' apps) take to apply;
 * - the reads: the app's day (288 five-minute buckets), its hour (60 minutes), and the user's day
 *   (all five apps), first call and p50/p99 of 500, with the size of the answer as JSON;
 * - the snapshot: its size, and the time to write and restore it;
 * - with `--store N`: N of these events appended to an embedded (SQLite) event store, then
 *   replayed into the statistics as a start without a snapshot does, next to the same read with
 *   no read model (what the store read alone costs).
 *
 * Standalone: `node --import tsx scripts/bench/statistics.ts [--events N] [--store N]`.
 * Target: the day of the busy app answered in well under a second (the page's budget).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { replayInto } from '../../apps/read-models/feed.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { createSqliteEventStore } from '../../infra/event-store/sqlite/sqlite-event-store.ts';
import type { Projection } from '../../projections/projection.ts';
import { StatisticsProjection } from '../../projections/statistics/statistics-projection.ts';
import { percentile } from './measures.ts';

const DAY_MS = 24 * 3_600_000;
const MESSENGERS = ['signal', 'simplex', 'session'] as const;
const BUSY_USER = 'usr_busy';
const BUSY_APP = 'app_busy';
const QUIET_APPS = ['app_q1', 'app_q2', 'app_q3', 'app_q4'];
const OTHER_APPS = Array.from({ length: 100 }, (_, i) => `app_other${i}`);
/** A sealed body of a batch of ten messages stands for what the store holds (never opened here). */
const SEALED = `s2:${'A'.repeat(2400)}`;

/** An event to append, with the stream it goes to. */
interface Generated {
  readonly streamName: string;
  readonly type: string;
  readonly data: Record<string, unknown>;
}

/**
 * A day of traffic ending at `endMs`, about `events` events: batches of ten messages, of which 92 %
 * are delivered at once, 5 % after a failed attempt, 2 % given up after three, 1 % still waiting;
 * one inbound message for every two sent. 90 % of it is the busy app's.
 */
export function* dayOfTraffic(events: number, endMs: number): Generator<Generated> {
  const startMs = endMs - DAY_MS;
  yield* [BUSY_APP, ...QUIET_APPS].map((appId) => appCreated(appId, BUSY_USER, startMs));
  yield* OTHER_APPS.map((appId, i) => appCreated(appId, `usr_other${i}`, startMs));
  // About 17 events per batch of ten messages (1 accepted, ~11 outcomes, 5 inbound).
  const batches = Math.max(1, Math.round(events / 17));
  const step = DAY_MS / batches;
  let emitted = 0;
  for (let k = 0; emitted < events; k++) {
    const at = startMs + k * step;
    const iso = (offsetMs: number) => new Date(Math.min(endMs, at + offsetMs)).toISOString();
    const appId = k % 10 < 9 ? BUSY_APP : k % 20 === 9 ? QUIET_APPS[k % QUIET_APPS.length]! : OTHER_APPS[k % OTHER_APPS.length]!;
    const messenger = MESSENGERS[k % MESSENGERS.length]!;
    const ids = Array.from({ length: 10 }, (_, i) => `m${k}_${i}`);
    const out: Generated[] = [
      {
        streamName: `sendbatch-b${k}`,
        type: 'MessagesAccepted',
        data: { batchId: `b${k}`, credentialId: 'cred', userId: 'u', messages: ids.map((messageId) => ({ messageId, appId, messenger, keyId: 'k' })), bodies: [{ keyId: 'k', appId, sealed: SEALED }], acceptedAt: iso(0) },
      },
    ];
    ids.forEach((messageId, i) => {
      // Spread over the apps alike (37 is prime to 100: every fate once in 100 messages, in no app's pattern).
      const fate = ((k * 10 + i) * 37) % 100;
      const ref = { messageId, appId, messenger };
      const stream = `outbound-${messageId}`;
      const failed = (attempt: number, retry: boolean) => ({
        streamName: stream, type: 'DeliveryAttemptFailed',
        data: { ...ref, batchId: `b${k}`, keyId: 'k', attempt, reason: 'connector down', permanent: false, failedAt: iso(attempt * 1000), ...(retry ? { retry: { attempt: attempt + 1, dueAt: iso(attempt * 2000) } } : {}) },
      });
      if (fate < 92) out.push({ streamName: stream, type: 'MessageDelivered', data: { ...ref, attempt: 1, deliveredAt: iso(50) } });
      else if (fate < 97) out.push(failed(1, true), { streamName: stream, type: 'MessageDelivered', data: { ...ref, attempt: 2, deliveredAt: iso(1100) } });
      else if (fate < 99)
        out.push(failed(1, true), failed(2, true), failed(3, false), { streamName: stream, type: 'MessageAbandoned', data: { ...ref, attempts: 3, reason: 'gave up', abandonedAt: iso(3000) } });
      if (i % 2 === 0)
        out.push({
          streamName: `inbound-i${k}_${i}`, type: 'InboundMessageReceived',
          data: { messageId: `i${k}_${i}`, appId, appMessengerId: 'am', messenger, keyId: 'k', sealed: SEALED.slice(0, 300), timestamp: at, isGroupMessage: false, isCommand: false, receivedAt: iso(200) },
        });
    });
    for (const event of out) {
      if (emitted >= events) return;
      emitted += 1;
      yield event;
    }
  }
}

function appCreated(appId: string, userId: string, atMs: number): Generated {
  return {
    streamName: `app-${appId}`,
    type: 'AppCreated',
    data: { appId, userId, name: appId, protocol: [...MESSENGERS], status: 'active', deliveryType: 'poll', webhookUrl: null, webhookAuthType: null, webhookAuthSecretEncrypted: null, webhookAuthHeaderName: null, apiKeyId: null, createdAt: new Date(atMs).toISOString() },
  };
}

const recordedOf = (events: Iterable<Generated>, recordedAt: Date): RecordedEvent[] => {
  const out: RecordedEvent[] = [];
  let position = 0n;
  for (const e of events) out.push({ id: `e${++position}`, type: e.type, data: e.data, metadata: {}, streamName: e.streamName, streamVersion: 1n, globalPosition: position, recordedAt });
  return out;
};

export interface ReadFigures {
  readonly firstMs: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  /** The answer as JSON. */
  readonly bytes: number;
}

/** A read timed once cold, then 500 times (after 20 to warm up). */
const timed = (read: () => unknown): ReadFigures => {
  let t0 = performance.now();
  const answer = read();
  const firstMs = performance.now() - t0;
  for (let i = 0; i < 20; i++) read();
  const times: number[] = [];
  for (let i = 0; i < 500; i++) {
    t0 = performance.now();
    read();
    times.push(performance.now() - t0);
  }
  return { firstMs, p50Ms: percentile(times, 50), p99Ms: percentile(times, 99), bytes: JSON.stringify(answer).length };
};

export interface StatisticsFigures {
  readonly events: number;
  readonly foldMs: number;
  readonly accepted: number;
  readonly waiting: number;
  readonly appDay: ReadFigures;
  readonly appHour: ReadFigures;
  readonly userDay: ReadFigures;
  readonly snapshotBytes: number;
  readonly snapshotMs: number;
  readonly restoreMs: number;
  readonly store?: { readonly events: number; readonly appendMs: number; readonly replayMs: number; readOnlyMs: number };
}

/** Reads the same categories as the statistics and applies nothing: the store read alone. */
const readOnly = (): Projection => ({ name: 'none', categories: new StatisticsProjection().categories, apply: () => undefined, snapshot: () => null, restore: () => undefined });

const measureStore = async (events: number, endMs: number): Promise<NonNullable<StatisticsFigures['store']>> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-bench-statistics-'));
  const store = createSqliteEventStore({ path: path.join(dir, 'events.db'), synchronous: 'off' });
  try {
    let t0 = performance.now();
    let chunk: Array<Promise<unknown>> = [];
    for (const e of dayOfTraffic(events, endMs)) {
      chunk.push(store.appendToStream(e.streamName, [{ type: e.type, data: e.data }]));
      if (chunk.length === 2000) {
        await Promise.all(chunk);
        chunk = [];
      }
    }
    await Promise.all(chunk);
    const appendMs = performance.now() - t0;
    const head = await store.headPosition();
    t0 = performance.now();
    await replayInto(store, [readOnly()], { after: 0n, upTo: head });
    const readOnlyMs = performance.now() - t0;
    t0 = performance.now();
    await replayInto(store, [new StatisticsProjection()], { after: 0n, upTo: head });
    const replayMs = performance.now() - t0;
    return { events, appendMs, replayMs, readOnlyMs };
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
};

export const measureStatistics = async (options: { events: number; storeEvents?: number }): Promise<StatisticsFigures> => {
  const endMs = Date.now();
  const events = recordedOf(dayOfTraffic(options.events, endMs), new Date(endMs));
  const statistics = new StatisticsProjection();
  let t0 = performance.now();
  for (const event of events) statistics.apply(event);
  const foldMs = performance.now() - t0;
  events.length = 0;

  const appDay = timed(() => statistics.forApp(BUSY_USER, BUSY_APP, 'day', endMs));
  const appHour = timed(() => statistics.forApp(BUSY_USER, BUSY_APP, 'hour', endMs));
  const userDay = timed(() => statistics.forUser(BUSY_USER, 'day', endMs));
  const totals = statistics.forApp(BUSY_USER, BUSY_APP, 'day', endMs)!.total.totals;

  t0 = performance.now();
  const snapshot = JSON.stringify(statistics.snapshot());
  const snapshotMs = performance.now() - t0;
  t0 = performance.now();
  new StatisticsProjection().restore(JSON.parse(snapshot));
  const restoreMs = performance.now() - t0;

  const store = options.storeEvents ? await measureStore(options.storeEvents, endMs) : undefined;
  return { events: options.events, foldMs, accepted: totals.accepted, waiting: totals.waiting, appDay, appHour, userDay, snapshotBytes: snapshot.length, snapshotMs, restoreMs, ...(store ? { store } : {}) };
};

/** The figures as the rows of the bench's table. */
export const statisticsRows = (f: StatisticsFigures): Array<[string, string]> => {
  const read = (r: ReadFigures) => `first ${r.firstMs.toFixed(2)} ms, p50 ${r.p50Ms.toFixed(3)} ms, p99 ${r.p99Ms.toFixed(3)} ms, ${(r.bytes / 1024).toFixed(1)} KiB of JSON`;
  const rate = (events: number, ms: number) => `${Math.round(events / (ms / 1000)).toLocaleString('en')} events/s`;
  return [
    ['statistics: fold a day of a busy app', `${f.events.toLocaleString('en')} events in ${(f.foldMs / 1000).toFixed(2)} s (${rate(f.events, f.foldMs)}); the app's day: ${f.accepted.toLocaleString('en')} accepted, ${f.waiting.toLocaleString('en')} waiting`],
    ["statistics: the busy app's day (288 five-minute buckets)", `${read(f.appDay)} (target: well under 1 s)`],
    ["statistics: the busy app's hour (60 minutes)", read(f.appHour)],
    ["statistics: the user's day (5 apps)", read(f.userDay)],
    ['statistics: snapshot', `${(f.snapshotBytes / 1024).toFixed(0)} KiB, written in ${f.snapshotMs.toFixed(1)} ms, restored in ${f.restoreMs.toFixed(1)} ms`],
    ...(f.store
      ? ([
          [
            'statistics: replay from the embedded store',
            `${f.store.events.toLocaleString('en')} events: ${(f.store.replayMs / 1000).toFixed(2)} s (${rate(f.store.events, f.store.replayMs)}); the store read alone ${(f.store.readOnlyMs / 1000).toFixed(2)} s (${rate(f.store.events, f.store.readOnlyMs)}); appended in ${(f.store.appendMs / 1000).toFixed(1)} s`,
          ],
        ] as Array<[string, string]>)
      : []),
  ];
};

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const arg = (name: string) => (process.argv.includes(name) ? Number(process.argv[process.argv.indexOf(name) + 1]) : undefined);
  const figures = await measureStatistics({ events: arg('--events') ?? 1_000_000, storeEvents: arg('--store') });
  const rows = statisticsRows(figures);
  console.log(`| measure | result |\n|---|---|\n${rows.map(([name, value]) => `| ${name} | ${value} |`).join('\n')}`);
  console.log(`\nnode ${process.version}, ${os.cpus().length} cores`);
}
