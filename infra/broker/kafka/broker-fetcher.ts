import type { Logger } from 'pino';
import { FetchSession, type SessionPartition } from './fetch-session.ts';
import type { WireCluster, WireRecord } from './kafkajs-wire.ts';

/** What a broker fetcher reports to the inbox tail that owns its partitions. */
export interface FetcherHooks<P extends SessionPartition> {
  /** The partition of a topic the tail reads (an answer names topics by name). */
  partitionOf(topic: string, partition: number): P | undefined;
  /** Records fetched for a partition (some may be older than its position, or control records). */
  received(p: P, records: readonly WireRecord[]): void;
  /** The broker answered a partition with an error; the fetcher no longer fetches it. */
  refused(p: P, errorCode: number): void;
  /** A fetch failed (connection, timeout, broker gone); the fetcher no longer fetches these. */
  failed(partitions: readonly P[], error: unknown): void;
}

export interface BrokerFetcherOptions<P extends SessionPartition> {
  readonly nodeId: number;
  readonly cluster: WireCluster;
  /** How long the broker holds a fetch that finds nothing. */
  readonly maxWaitMs: number;
  readonly hooks: FetcherHooks<P>;
  readonly log: Logger;
}

/** The most a fetch asks for in all (kafkajs's consumer's default). */
const MAX_BYTES = 10_485_760;
const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 2_000;

/**
 * The fetch loop of the inbox tail at one broker: the partitions this broker leads, fetched
 * through one fetch session (fetch-session.ts), one long-polling fetch at a time. A fetch names
 * only what changed, so an idle loop's work does not grow with its partitions but for one look
 * at each per fetch (issue 49). A partition added while a fetch waits is fetched from the next one
 * (at most `maxWaitMs` later).
 */
export class BrokerFetcher<P extends SessionPartition> {
  private readonly members = new Set<P>();
  private readonly session = new FetchSession<P>();
  private wake: (() => void) | undefined;
  private stopped = false;
  private readonly running: Promise<void>;

  constructor(private readonly options: BrokerFetcherOptions<P>) {
    this.running = this.run();
  }

  get nodeId(): number {
    return this.options.nodeId;
  }

  /** Fetches the partition from the next fetch on. */
  add(p: P): void {
    this.members.add(p);
    this.poke();
  }

  /** No longer fetches the partition (the next fetch has the session forget it). */
  remove(p: P): void {
    this.members.delete(p);
  }

  has(p: P): boolean {
    return this.members.has(p);
  }

  /** Something changed (a partition resumed): a loop waiting for work looks again. */
  poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.poke();
    await this.running;
  }

  /** Resolves at the next poke (a partition added or resumed, or stop). */
  private idle(): Promise<void> {
    return new Promise<void>((resolve) => (this.wake = resolve));
  }

  private fetchesAny(): boolean {
    for (const p of this.members) if (!p.paused) return true;
    return false;
  }

  private async run(): Promise<void> {
    const { nodeId, cluster, maxWaitMs, hooks, log } = this.options;
    let retryMs = RETRY_FIRST_MS;
    let failing = false;
    while (!this.stopped) {
      try {
        if (this.members.size === 0) {
          await this.idle();
          continue;
        }
        const broker = await cluster.broker(nodeId);
        if (this.stopped) break;
        const plan = this.session.plan(this.members, broker.fetchVersion(), Date.now());
        if (plan.sent.length === 0 && plan.forgotten.length === 0 && (plan.full || !this.fetchesAny())) {
          // Every partition is paused: wait until one resumes or is added.
          await this.idle();
          continue;
        }
        const answer = await broker.fetch({
          maxWaitTime: maxWaitMs,
          minBytes: 1,
          maxBytes: MAX_BYTES,
          sessionId: plan.sessionId,
          sessionEpoch: plan.sessionEpoch,
          topics: plan.topics,
          forgottenTopics: plan.forgottenTopics,
        });
        this.session.answered(plan, answer.errorCode ?? 0, answer.sessionId ?? 0, Date.now());
        if (failing) log.info({ nodeId }, 'kafka inbox tail fetches again');
        failing = false;
        retryMs = RETRY_FIRST_MS;
        for (const { topicName, partitions } of answer.responses)
          for (const fetched of partitions) {
            const p = hooks.partitionOf(topicName, fetched.partition);
            if (p === undefined || !this.members.has(p)) continue;
            if (fetched.errorCode !== 0) {
              this.members.delete(p);
              hooks.refused(p, fetched.errorCode);
            } else if (fetched.messages.length > 0) hooks.received(p, fetched.messages);
          }
      } catch (error) {
        this.session.failed();
        if (this.stopped) break;
        if (!failing) log.warn({ err: error, nodeId }, 'kafka inbox tail fetch failed; its partitions are looked up again');
        failing = true;
        const lost = [...this.members];
        this.members.clear();
        hooks.failed(lost, error);
        await new Promise((resolve) => setTimeout(resolve, retryMs));
        retryMs = Math.min(retryMs * 2, RETRY_MAX_MS);
      }
    }
  }
}
