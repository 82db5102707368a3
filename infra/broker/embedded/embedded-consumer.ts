import { alignedTicks } from './aligned-ticks.ts';
import { RecordsNoLongerHeldError, type ConsumeOptions, type ConsumedRecord, type Consumer, type HeldRecords } from '../port.ts';

/** A member's claim on (group, topic): granted with the committed offset, or refused until `retryAt`. */
export type Claim = { readonly held: true; readonly offset: bigint } | { readonly held: false; readonly retryAt: number };

/** What a consumer needs from the log. Every call is synchronous and may throw BrokerUnavailableError. */
export interface ConsumerSource {
  claim(groupId: string, topic: string, owner: string, leaseMs: number): Claim;
  /** Extends every lease of `owner` in the group; returns how many it still held. */
  renew(groupId: string, owner: string, leaseMs: number): number;
  release(groupId: string, owner: string): void;
  read(topic: string, offset: bigint, limit: number): ConsumedRecord[];
  commit(groupId: string, topic: string, nextOffset: bigint): void;
}

export interface EmbeddedConsumer extends Consumer {
  /** The log may have grown (a publish in this process, or another process committed). */
  wake(): void;
}

export interface EmbeddedConsumerSettings {
  readonly owner: string;
  readonly leaseMs: number;
  readonly onStopped: (consumer: EmbeddedConsumer) => void;
}

const FIRST_BACKOFF_MS = 100;
const MAX_BACKOFF_MS = 5000;

interface TopicState {
  readonly topic: string;
  held: boolean;
  /** Local view of the lease's end; past it the claim is made again (and the offset re-read). */
  leaseUntil: number;
  offset: bigint;
  /** The topic is skipped until then: its head record is not due yet, or its handler failed. */
  waitUntil: number;
  /** Another live member holds the topic; look again at the latest then. */
  claimRetryAt: number;
  backoffMs: number;
}

/**
 * A member of a consumer group on the embedded log. It claims each topic with a lease (so that one
 * member of a group, in any process, consumes a topic at a time), then serves its topics in turn,
 * one batch per topic per pass: a topic whose head record is not due sleeps on a timer while the
 * others keep flowing. Handler calls are sequential; the offset after a batch is committed only once
 * the handler resolved; a failed batch is handed again after a pause growing from 100 ms to 5 s.
 */
export function createEmbeddedConsumer(source: ConsumerSource, options: ConsumeOptions, settings: EmbeddedConsumerSettings): EmbeddedConsumer {
  const { owner, leaseMs } = settings;
  const batchSize = options.batchSize ?? 100;
  const states: TopicState[] = [...new Set(options.topics)].map((topic) => ({
    topic,
    held: false,
    leaseUntil: 0,
    offset: 0n,
    waitUntil: 0,
    claimRetryAt: 0,
    backoffMs: FIRST_BACKOFF_MS,
  }));
  let stopped = false;
  let dirty = false;
  let timer: NodeJS.Timeout | undefined;
  let release: (() => void) | undefined;
  let failureBackoffMs = FIRST_BACKOFF_MS;

  const report = (error: unknown): void => {
    try {
      options.onError?.(error);
    } catch {
      // an onError that throws must not stop consumption
    }
  };

  /** Waits for wake() (if `wakeable`), stop(), or `ms` (if given). */
  const rest = (ms: number | undefined, wakeable: boolean): Promise<void> =>
    new Promise<void>((resolve) => {
      const done = () => {
        if (timer !== undefined) clearTimeout(timer);
        timer = undefined;
        release = undefined;
        resolve();
      };
      if (ms !== undefined) timer = setTimeout(done, Math.max(0, ms));
      release = wakeable ? done : () => stopped && done();
    });

  // At the multiples of a third of the lease, with every other holder's renewal (aligned-ticks.ts).
  const renewal = alignedTicks(Math.max(10, Math.floor(leaseMs / 3)), () => {
    const held = states.filter((s) => s.held);
    if (stopped || held.length === 0) return;
    try {
      const now = Date.now();
      const still = source.renew(options.groupId, owner, leaseMs);
      for (const state of held) {
        if (still >= held.length) state.leaseUntil = now + leaseMs;
        else state.held = false; // some lease was taken over: claim again, which re-reads offsets
      }
    } catch (error) {
      report(error); // the local leaseUntil runs out, then the claim is retried
    }
  });

  const resolved = Promise.resolve();
  /**
   * The hold of a batch of `state`'s topic (HeldRecords): another member may claim the topic once
   * this one's lease ran out, even if this process still runs (frozen past it, then continued). While
   * the lease's local end is more than a third of a lease ahead, it holds; nearer, the lease is
   * renewed at once, and the hold is lost when the renewal finds another member's.
   */
  const holdOf = (state: TopicState): HeldRecords => ({
    confirm: () => {
      if (!state.held || stopped) return Promise.reject(new RecordsNoLongerHeldError(`The records of ${state.topic} are no longer held by this member`));
      const now = Date.now();
      if (state.leaseUntil - now > leaseMs / 3) return resolved;
      try {
        const held = states.filter((s) => s.held).length;
        if (source.renew(options.groupId, owner, leaseMs) < held) {
          state.held = false;
          return Promise.reject(new RecordsNoLongerHeldError(`The lease on ${state.topic} was taken over by another member`));
        }
        for (const s of states) if (s.held) s.leaseUntil = now + leaseMs;
        return resolved;
      } catch (error) {
        return Promise.reject(error);
      }
    },
    stillHeld: () => state.held && !stopped && state.leaseUntil - Date.now() > leaseMs / 3,
  });

  /** One pass over the topics, at most one batch each; returns whether a handler ran. */
  const pass = async (): Promise<boolean> => {
    let worked = false;
    for (const state of states) {
      if (stopped) break;
      let now = Date.now();
      if (state.waitUntil > now) continue;
      if (!state.held || state.leaseUntil <= now) {
        const claim = source.claim(options.groupId, state.topic, owner, leaseMs);
        if (!claim.held) {
          state.held = false;
          state.claimRetryAt = claim.retryAt;
          continue;
        }
        Object.assign(state, { held: true, leaseUntil: now + leaseMs, offset: claim.offset });
      }
      const records = source.read(state.topic, state.offset, batchSize);
      now = Date.now();
      let due = 0;
      while (due < records.length && (records[due]!.dueAt ?? 0) <= now) due++;
      if (due < records.length && due === 0) state.waitUntil = records[0]!.dueAt!;
      if (due === 0) continue;
      const batch = due === records.length ? records : records.slice(0, due);
      try {
        await options.handler(batch, holdOf(state));
      } catch (error) {
        report(error);
        state.waitUntil = Date.now() + state.backoffMs;
        state.backoffMs = Math.min(state.backoffMs * 2, MAX_BACKOFF_MS);
        continue;
      }
      state.backoffMs = FIRST_BACKOFF_MS;
      const next = batch[batch.length - 1]!.offset + 1n;
      source.commit(options.groupId, state.topic, next);
      state.offset = next;
      worked = true;
      // Let I/O and timers waiting on the event loop run between batches.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return worked;
  };

  /** When a timer must wake the consumer: the earliest due head, failed batch or claim retry. */
  const nextDeadline = (): number | undefined => {
    const now = Date.now();
    let next: number | undefined;
    for (const state of states) {
      const at = state.held ? state.waitUntil : state.claimRetryAt;
      if (at > now && (next === undefined || at < next)) next = at;
    }
    return next;
  };

  const run = async (): Promise<void> => {
    await new Promise<void>((resolve) => setImmediate(resolve)); // never call the handler inside consume()
    while (!stopped) {
      dirty = false;
      let worked: boolean;
      try {
        worked = await pass();
        failureBackoffMs = FIRST_BACKOFF_MS;
      } catch (error) {
        // The log failed (locked, I/O...): nothing was committed, the same records come again.
        report(error);
        for (const state of states) state.held = false;
        await rest(failureBackoffMs, false);
        failureBackoffMs = Math.min(failureBackoffMs * 2, MAX_BACKOFF_MS);
        continue;
      }
      if (worked || dirty || stopped) continue;
      const deadline = nextDeadline();
      // +1: a timer may fire within the same millisecond as its deadline.
      await rest(deadline === undefined ? undefined : deadline - Date.now() + 1, true);
    }
  };

  const running = run().catch(report);

  const consumer: EmbeddedConsumer = {
    wake() {
      dirty = true;
      release?.();
    },
    async stop() {
      if (!stopped) {
        stopped = true;
        renewal.stop();
        release?.();
      }
      await running;
      try {
        source.release(options.groupId, owner);
      } catch {
        // the leases run out by themselves
      }
      settings.onStopped(consumer);
    },
  };
  return consumer;
}
