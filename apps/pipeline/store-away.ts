import type { Logger } from 'pino';
import type { Stoppable } from './leased-roles.ts';

/** A share of the deployment's work this instance holds (a consumer group's partitions, leased roles), which another instance can take over. */
export interface YieldableWork {
  readonly name: string;
  start(): Promise<Stoppable>;
  /**
   * Whether it may be given up now (default: yes). The delivery worker may not while it keeps
   * outcomes of hand-offs it could not record: the member taking its records would hand those
   * messages again, so they wait for the store here instead.
   */
  mayYield?(): boolean;
}

export interface StoreAwayOptions {
  /** Resolves when the store answers (EventStore.ping). */
  readonly ping: () => Promise<void>;
  readonly log: Logger;
  /** How long the store must fail to answer before the work is given up (ms). */
  readonly awayAfterMs: number;
  /** How often the store is asked while it answers, and while it does not (ms). */
  readonly probeEveryMs?: number;
  /** A probe not answered within this counts as failed (ms). */
  readonly probeTimeoutMs?: number;
}

export interface StoreAwayWatch {
  /** The works given up now (for the log and tests). */
  yielded(): string[];
  /** Stops watching, and stops every work still running. */
  stop(): Promise<void>;
}

interface Held {
  readonly work: YieldableWork;
  running: Stoppable | undefined;
  /** Its stop, while it is being given up: taken up again only after. */
  stopping: Promise<void> | undefined;
}

/**
 * Runs the given works while this instance's event store answers, and gives each up (its
 * partitions and leases go to the other instances) once the store has not answered for
 * `awayAfterMs`, taking it up again as soon as the store answers. An instance cut off from the
 * store but not from the broker would otherwise keep the partitions and roles it cannot serve: its
 * heartbeats go on, and nothing they hold moves (when it held the publisher, nothing was delivered
 * anywhere for as long as the cut lasted; issue 48, docs/durability.md).
 */
export const runWhileStoreAnswers = async (options: StoreAwayOptions, works: readonly YieldableWork[]): Promise<StoreAwayWatch> => {
  const probeEveryMs = options.probeEveryMs ?? 2_000;
  const probeTimeoutMs = options.probeTimeoutMs ?? 5_000;
  const held: Held[] = [];
  for (const work of works) held.push({ work, running: await work.start(), stopping: undefined });
  let failingSince: number | undefined;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let deadline: NodeJS.Timeout | undefined;
  let turn: Promise<void> = Promise.resolve();

  const answers = async (): Promise<boolean> => {
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([options.ping(), new Promise((_, reject) => (timeout = setTimeout(() => reject(new Error(`no answer within ${probeTimeoutMs} ms`)), probeTimeoutMs)))]);
      return true;
    } catch {
      return false;
    } finally {
      clearTimeout(timeout);
    }
  };

  // All at once: a work's stop waits for what it has in flight, which may wait for the store's own timeouts.
  const giveUp = async (awayMs: number): Promise<void> => {
    const stopping: Promise<void>[] = [];
    for (const entry of held) {
      if (!entry.running || stopped || !(entry.work.mayYield?.() ?? true)) continue;
      const running = entry.running;
      entry.running = undefined;
      options.log.warn({ work: entry.work.name, storeAwayMs: awayMs }, 'the event store does not answer: this instance gives its share of this work to the others until it does');
      entry.stopping = running.stop().catch((error: unknown) => options.log.error({ err: error, work: entry.work.name }, 'giving work up failed'));
      stopping.push(entry.stopping);
    }
    await Promise.all(stopping);
  };

  const takeUp = async (): Promise<void> => {
    for (const entry of held) {
      if (entry.running || stopped) continue;
      await entry.stopping;
      try {
        entry.running = await entry.work.start();
        options.log.info({ work: entry.work.name }, 'the event store answers again: this instance takes its share of this work up again');
      } catch (error) {
        options.log.error({ err: error, work: entry.work.name }, 'taking work up again failed; tried again at the next look');
      }
    }
  };

  /** Gives the work up once the store has been away long enough (a work that may not yet is asked again at the next look). */
  const giveUpIfAway = async (): Promise<void> => {
    if (failingSince === undefined) return;
    const awayMs = Date.now() - failingSince;
    if (awayMs >= options.awayAfterMs) await giveUp(awayMs);
  };

  const look = async (): Promise<void> => {
    const askedAt = Date.now();
    if (await answers()) {
      failingSince = undefined;
      clearTimeout(deadline);
      await takeUp();
      return;
    }
    if (failingSince === undefined) {
      // Away since the first look that got no answer was asked: given up at that time plus the bound, not at a later look's end.
      failingSince = askedAt;
      // Not queued behind a look in progress (it may wait out its probe's timeout): giving up and taking up again order themselves by `stopping`.
      deadline = setTimeout(() => void giveUpIfAway(), Math.max(0, askedAt + options.awayAfterMs - Date.now()));
      deadline.unref();
    }
    await giveUpIfAway();
  };

  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      turn = turn.then(look).finally(schedule);
    }, probeEveryMs);
    timer.unref();
  };
  schedule();

  return {
    yielded: () => held.filter((entry) => !entry.running).map((entry) => entry.work.name),
    async stop() {
      stopped = true;
      clearTimeout(timer);
      clearTimeout(deadline);
      await turn;
      for (const entry of held) {
        const running = entry.running;
        entry.running = undefined;
        await entry.stopping;
        await running?.stop();
      }
    },
  };
};
