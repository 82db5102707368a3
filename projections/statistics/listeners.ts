/**
 * Who wants to hear that a user's statistics changed (the live statistics page, through a stream
 * route): an in-process registry with a bound per user and in total. Changes are gathered while
 * the projection applies a batch of events and told once per user after it (in a microtask), with
 * the apps that changed; the listener then reads the figures it shows through the queries.
 */

export interface StatisticsChange {
  readonly userId: string;
  /** The user's apps whose figures changed (an app deleted included). */
  readonly appIds: readonly string[];
}

export type StatisticsListener = (change: StatisticsChange) => void;

export type Subscription =
  | { readonly ok: true; readonly unsubscribe: () => void }
  | { readonly ok: false; readonly reason: 'too-many-for-user' | 'too-many' };

/** A subscription that `undo` ends: its unsubscribe ends it once, however often it is called. */
export const undoneOnce = (undo: () => void): Extract<Subscription, { ok: true }> => {
  let active = true;
  return {
    ok: true,
    unsubscribe: () => {
      if (!active) return;
      active = false;
      undo();
    },
  };
};

export interface ListenerLimits {
  /** Listeners of one user (default 10: a few open pages). */
  readonly perUser: number;
  /** Listeners of every user together (default 1000). */
  readonly total: number;
}

export const DEFAULT_LISTENER_LIMITS: ListenerLimits = { perUser: 10, total: 1000 };

export class StatisticsListeners {
  private readonly byUser = new Map<string, Set<StatisticsListener>>();
  private readonly pending = new Map<string, Set<string>>();
  private count = 0;
  private scheduled = false;

  constructor(
    private readonly limits: ListenerLimits = DEFAULT_LISTENER_LIMITS,
    /** Told when a listener throws (it stays subscribed). */
    private readonly onListenerError: (error: unknown) => void = () => undefined,
  ) {}

  /** Listeners now registered, of every user. */
  get size(): number {
    return this.count;
  }

  /** Registers a listener of a user's changes, unless a bound is reached. */
  subscribe(userId: string, listener: StatisticsListener): Subscription {
    const own = this.byUser.get(userId);
    if ((own?.size ?? 0) >= this.limits.perUser) return { ok: false, reason: 'too-many-for-user' };
    if (this.count >= this.limits.total) return { ok: false, reason: 'too-many' };
    // The same function twice is two listeners (two pages): wrap it so each has its own entry.
    const entry: StatisticsListener = (change) => listener(change);
    const set = own ?? new Set<StatisticsListener>();
    set.add(entry);
    this.byUser.set(userId, set);
    this.count += 1;
    return undoneOnce(() => {
      set.delete(entry);
      this.count -= 1;
      if (set.size === 0 && this.byUser.get(userId) === set) this.byUser.delete(userId);
    });
  }

  /** Notes that an app of a user changed; listeners hear of it once the current batch is applied. */
  changed(userId: string, appId: string): void {
    if (!this.byUser.has(userId)) return; // nobody listens: nothing kept
    const apps = this.pending.get(userId) ?? new Set<string>();
    apps.add(appId);
    this.pending.set(userId, apps);
    if (!this.scheduled) {
      this.scheduled = true;
      queueMicrotask(() => this.flush());
    }
  }

  /** Tells every listener of the users whose statistics changed since the last flush. */
  flush(): void {
    this.scheduled = false;
    const changes = [...this.pending];
    this.pending.clear();
    for (const [userId, apps] of changes) {
      const change: StatisticsChange = { userId, appIds: [...apps] };
      for (const listener of [...(this.byUser.get(userId) ?? [])]) {
        try {
          listener(change);
        } catch (error) {
          this.onListenerError(error);
        }
      }
    }
  }
}
