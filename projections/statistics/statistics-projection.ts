import type { AppEvent } from '../../domain/app/events.ts';
import { bucketOf, FIVE_MINUTES, oldestKept, TIERS, type StatisticsWindow } from '../../domain/statistics/buckets.ts';
import { FIGURES, talliesOf } from '../../domain/statistics/tally.ts';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../projection.ts';
import { BucketList, Counter, type StoredBucket } from './counter.ts';
import { DEFAULT_LISTENER_LIMITS, StatisticsListeners, type ListenerLimits, type StatisticsListener, type Subscription } from './listeners.ts';
import { viewOf, type StatisticsView, type UserStatisticsView } from './views.ts';
import { Recency } from '../recency.ts';

/** One app-messenger's statistics as a snapshot holds them. */
interface StoredCounter {
  /** `<appId>/<messenger>`. */
  id: string;
  appId: string;
  messenger: string;
  waiting: number;
  retrying: number;
  /** Per tier (by its name), the buckets kept, oldest first. */
  buckets: Record<string, StoredBucket[]>;
}

interface StoredStatistics {
  /** Every live app (`id`) and its user. */
  apps: Array<{ id: string; userId: string }>;
  counters: StoredCounter[];
  /** The statistics' clock: the newest counted event's time (none before the first). */
  clocks: Array<{ id: 'latest'; at: number }>;
}

/**
 * Counts of the outbound and inbound messages of every app, per user → app → messenger, in time
 * buckets (domain/statistics: figures in tally.ts, layout in buckets.ts), and the gauges of what
 * is waiting. Fed like every read model, from the `app` (whose app is whose), `sendbatch`
 * (accepted), `outbound` (delivered, failed, abandoned) and `inbound` (received) events.
 *
 * Bounded: per app-messenger the buckets that counted something, at most 64 one-minute and 300
 * five-minute ones (28 bytes each; an app-messenger with a burst in one bucket holds about 200
 * bytes, a busy one all day about 10 KB), freed when it has had no traffic for 25 hours; a deleted app's statistics go with it.
 * Old buckets are dropped against the statistics' clock (the newest counted event's time), never
 * the wall clock, so a rebuild from event 0 equals the live read model. Counts only: no body, no
 * contact, no message id is kept.
 *
 * A day's read is a sum over at most 288 buckets per app-messenger: it costs the same for a quiet
 * app and for one with a million messages a day (scripts/bench/statistics.ts).
 */
export class StatisticsProjection implements Projection {
  readonly name = 'statistics';
  readonly categories = ['app', 'sendbatch', 'outbound', 'inbound'] as const;
  private readonly owners = new Map<string, string>();
  private readonly appsByUser = new Map<string, Set<string>>();
  /** appId → messenger → counter. */
  private readonly counters = new Map<string, Map<string, Counter>>();
  private latestMs: number | undefined;
  /**
   * Per tier, the counters that hold buckets of it, stamped with their newest one there, the one
   * that counted in it longest ago first: a sweep frees what went quiet without a walk of every
   * counter (session 30: a walk every five minutes of the clock made a replay of a year with 15,000
   * app-messengers waiting spend most of its time sweeping).
   */
  private readonly expiring: Array<Recency<Counter>> = TIERS.map(() => new Recency<Counter>());
  /** The five-minute bucket of the clock at the last sweep of idle counters. */
  private sweptAt = Number.NEGATIVE_INFINITY;
  private readonly listeners: StatisticsListeners;

  constructor(options: { listeners?: ListenerLimits; onListenerError?: (error: unknown) => void } = {}) {
    this.listeners = new StatisticsListeners(options.listeners ?? DEFAULT_LISTENER_LIMITS, options.onListenerError);
  }

  apply(recorded: RecordedEvent): void {
    const event = recorded as unknown as AppEvent;
    switch (event.type) {
      case 'AppCreated':
        if (typeof event.data.appId === 'string' && typeof event.data.userId === 'string') this.own(event.data.appId, event.data.userId);
        return;
      case 'AppDeleted':
        return this.dropApp(event.data.appId);
      default:
        return this.count(recorded);
    }
  }

  private count(recorded: RecordedEvent): void {
    for (const tally of talliesOf(recorded)) {
      const userId = this.owners.get(tally.appId);
      if (userId === undefined) continue; // an app deleted (or never created): nobody's statistics
      if (this.latestMs === undefined || tally.atMs > this.latestMs) this.latestMs = tally.atMs;
      let byMessenger = this.counters.get(tally.appId);
      if (!byMessenger) this.counters.set(tally.appId, (byMessenger = new Map()));
      let counter = byMessenger.get(tally.messenger);
      if (!counter) byMessenger.set(tally.messenger, (counter = new Counter(tally.appId, tally.messenger)));
      counter.waiting += tally.waiting;
      counter.retrying += tally.retrying;
      counter.add(tally.atMs, tally.counts, this.latestMs);
      this.touched(counter);
      if (counter.empty) this.remove(counter);
      this.listeners.changed(userId, tally.appId);
    }
    this.sweep();
  }

  /** Moves a counter last in each tier's expiry order whose newest bucket it changed. */
  private touched(counter: Counter): void {
    for (let t = 0; t < TIERS.length; t++) {
      const newest = counter.newest(t);
      const expiring = this.expiring[t]!;
      if (newest !== undefined && expiring.stampOf(counter) !== newest) expiring.touch(counter, newest);
    }
  }

  private remove(counter: Counter): void {
    for (const expiring of this.expiring) expiring.forget(counter);
    const byMessenger = this.counters.get(counter.appId);
    if (byMessenger?.get(counter.messenger) !== counter) return;
    byMessenger.delete(counter.messenger);
    if (byMessenger.size === 0) this.counters.delete(counter.appId);
  }

  /** Once per five minutes of the clock: frees the tiers of the app-messengers that went quiet, and those that then hold nothing. */
  private sweep(): void {
    if (this.latestMs === undefined) return;
    const now = bucketOf(this.latestMs, FIVE_MINUTES);
    if (now === this.sweptAt) return;
    this.sweptAt = now;
    TIERS.forEach((tier, t) => {
      const oldest = oldestKept(this.latestMs!, tier);
      const expiring = this.expiring[t]!;
      // Up to the first that counted in a bucket the tier keeps: the rest counted later.
      for (let quiet = expiring.oldest(); quiet !== undefined && quiet[1] < oldest; quiet = expiring.oldest()) {
        const [counter] = quiet;
        expiring.forget(counter);
        counter.tiers[t] = undefined;
        if (counter.empty) this.remove(counter);
      }
    });
  }

  private own(appId: string, userId: string): void {
    this.owners.set(appId, userId);
    const apps = this.appsByUser.get(userId) ?? new Set<string>();
    apps.add(appId);
    this.appsByUser.set(userId, apps);
  }

  private dropApp(appId: string): void {
    const userId = this.owners.get(appId);
    if (userId === undefined) return;
    this.owners.delete(appId);
    for (const counter of this.counters.get(appId)?.values() ?? []) this.remove(counter);
    const apps = this.appsByUser.get(userId);
    apps?.delete(appId);
    if (apps?.size === 0) this.appsByUser.delete(userId);
    this.listeners.changed(userId, appId);
  }

  private countersOf(appIds: Iterable<string>): Counter[] {
    const out: Counter[] = [];
    for (const appId of appIds) for (const counter of this.counters.get(appId)?.values() ?? []) out.push(counter);
    return out;
  }

  /** A user's statistics over the last hour (per minute) or day (per 5 minutes) at `nowMs`: all apps, per messenger and per app. */
  forUser(userId: string, window: StatisticsWindow, nowMs: number = Date.now()): UserStatisticsView {
    const { view, perApp } = viewOf(this.countersOf(this.appsByUser.get(userId) ?? []), window, nowMs);
    return { ...view, apps: Object.fromEntries(perApp) };
  }

  /** One app's statistics, if it is a live app of this user (another user's app is undefined, as an unknown one). */
  forApp(userId: string, appId: string, window: StatisticsWindow, nowMs: number = Date.now()): StatisticsView | undefined {
    if (this.owners.get(appId) !== userId) return undefined;
    return viewOf(this.countersOf([appId]), window, nowMs).view;
  }

  /**
   * Tells `listener` whenever the statistics of one of the user's apps change (once per applied
   * batch of events, with the apps that changed). Refused beyond 10 listeners per user or 1000 in
   * all (the defaults).
   */
  onChange(userId: string, listener: StatisticsListener): Subscription {
    return this.listeners.subscribe(userId, listener);
  }

  /** App-messengers whose statistics are held now (buckets of the last 25 hours, or messages waiting). */
  get counterCount(): number {
    let n = 0;
    for (const byMessenger of this.counters.values()) n += byMessenger.size;
    return n;
  }

  /** Listeners registered now (for a gauge). */
  get listenerCount(): number {
    return this.listeners.size;
  }

  snapshot(): unknown {
    const latest = this.latestMs;
    const counters: StoredCounter[] = [];
    for (const byMessenger of this.counters.values()) {
      for (const counter of byMessenger.values()) {
        const buckets: Record<string, StoredBucket[]> = {};
        if (latest !== undefined)
          TIERS.forEach((tier, t) => {
            const kept = counter.tiers[t]?.stored(oldestKept(latest, tier), bucketOf(latest, tier)) ?? [];
            if (kept.length > 0) buckets[tier.name] = kept;
          });
        if (Object.keys(buckets).length === 0 && counter.waiting === 0 && counter.retrying === 0) continue;
        const { appId, messenger, waiting, retrying } = counter;
        counters.push({ id: `${appId}/${messenger}`, appId, messenger, waiting, retrying, buckets });
      }
    }
    const stored: StoredStatistics = {
      apps: [...this.owners].map(([id, userId]) => ({ id, userId })),
      counters,
      clocks: latest === undefined ? [] : [{ id: 'latest', at: latest }],
    };
    return stored;
  }

  restore(snapshot: unknown): void {
    this.owners.clear();
    this.appsByUser.clear();
    this.counters.clear();
    for (const expiring of this.expiring) expiring.clear();
    this.latestMs = undefined;
    this.sweptAt = Number.NEGATIVE_INFINITY;
    const stored = snapshot as Partial<StoredStatistics>;
    for (const { id, userId } of stored.apps ?? []) this.own(id, userId);
    this.latestMs = stored.clocks?.find((c) => c.id === 'latest')?.at;
    for (const entry of stored.counters ?? []) {
      if (!this.owners.has(entry.appId)) continue;
      const counter = new Counter(entry.appId, entry.messenger);
      counter.waiting = entry.waiting;
      counter.retrying = entry.retrying;
      TIERS.forEach((tier, t) => {
        const kept = entry.buckets[tier.name] ?? [];
        if (kept.length === 0) return;
        const list = (counter.tiers[t] = new BucketList(tier));
        const oldest = this.latestMs === undefined ? Number.NEGATIVE_INFINITY : oldestKept(this.latestMs, tier);
        for (const [bucket, ...counts] of kept) {
          if (bucket === undefined || bucket < oldest || counts.length !== FIGURES.length) continue;
          list.add(bucket, Object.fromEntries(FIGURES.map((figure, f) => [figure, counts[f]])), oldest);
        }
      });
      let byMessenger = this.counters.get(entry.appId);
      if (!byMessenger) this.counters.set(entry.appId, (byMessenger = new Map()));
      byMessenger.set(entry.messenger, counter);
    }
    // The expiry order, the counter that counted longest ago first.
    TIERS.forEach((_, t) => {
      const held: Array<[Counter, number]> = [];
      for (const byMessenger of this.counters.values())
        for (const counter of byMessenger.values()) {
          const newest = counter.newest(t);
          if (newest !== undefined) held.push([counter, newest]);
        }
      held.sort((a, b) => a[1] - b[1]);
      for (const [counter, newest] of held) this.expiring[t]!.touch(counter, newest);
    });
  }
}
