import type { Kafka } from 'kafkajs';
import type { Logger } from 'pino';
import type { ConsumedRecord } from '../port.ts';
import { BrokerFetcher, type FetcherHooks } from './broker-fetcher.ts';
import { isUnknownTopic } from './kafka-clients.ts';
import { fromKafkaMessage } from './kafka-records.ts';
import { wireClusterOf, type WireCluster, type WireRecord } from './kafkajs-wire.ts';

/** A partition the tail reads, and the records it fetched and were not popped yet. */
export interface PartitionBuffer {
  readonly topic: string;
  readonly partition: number;
  /** Fetched records not known to be popped, in offset order. */
  records: ConsumedRecord[];
  /** Offset after the last record fetched: where the next fetch starts. */
  next: bigint;
  /** Full (`maxBuffered`): not fetched until pops drain it. */
  paused: boolean;
  /** The fetch loop of the partition's leader; none while its leader is looked up. */
  fetcher: BrokerFetcher<PartitionBuffer> | undefined;
}

export interface InboxTailOptions {
  /** The client the tail fetches through (its own cluster of connections, kafkajs-wire.ts). */
  kafka: Kafka;
  /** Records buffered per partition before its fetching pauses (until pops drain it). */
  maxBuffered: number;
  /** How long the broker holds a fetch that finds nothing (a record that comes answers it at once). */
  maxWaitMs: number;
  /** The port's name of a Kafka topic, for the records handed out. */
  portTopic: (kafkaTopic: string) => string;
  /** Told a topic's port name when records of it were fetched (Broker.watchArrivals). */
  arrived?: (portTopic: string) => void;
  /** Which of the topics exist now (a topic deleted by any process is dropped from the tail). */
  existing: (topics: readonly string[]) => Promise<string[]>;
  log: Logger;
}

/** Where a followed topic starts, per partition: its pop cursor's floor, and its end when followed. */
export interface FollowStart {
  readonly floors: ReadonlyMap<number, bigint>;
  readonly highs: ReadonlyMap<number, bigint>;
}

const CATCH_UP_TIMEOUT_MS = 10_000;
/** What a topic without buffered partitions answers (not a new map for each look). */
const NO_PARTITIONS: ReadonlyMap<number, PartitionBuffer> = new Map();
/** How long a partition the broker refused, or whose leader was not found, waits before it is looked up again (doubling while lookups fail). */
const LOOK_UP_AGAIN_MS = 250;
const LOOK_UP_AGAIN_MAX_MS = 2_000;
const OFFSET_OUT_OF_RANGE = 1;

/**
 * The records of the topics this process pops from, fetched as they arrive and kept until they
 * are popped (here or by another process): pops read this buffer and claim what they take through
 * the pop cursor. The tail fetches with a loop of its own per leader broker (broker-fetcher.ts),
 * each through a fetch session, not with kafkajs's consumer: no group, no restart to follow a topic
 * (one more partition in the next fetch), and an idle fetch's work does not grow with the topics
 * followed (issue 49). Each partition starts at its pop cursor's floor (what is popped below it);
 * one whose records were deleted by retention starts at its earliest offset. A followed topic that
 * is deleted (by this process or another) is dropped.
 */
export class InboxTail {
  private readonly buffers = new Map<string, Map<number, PartitionBuffer>>();
  private readonly wanted = new Set<string>();
  private readonly followed = new Set<string>();
  /** Where to start a topic not fetched yet: the cursor's floor per partition. */
  private readonly startAt = new Map<string, Map<number, bigint>>();
  private readonly cluster: WireCluster;
  private readonly fetchers = new Map<number, BrokerFetcher<PartitionBuffer>>();
  private readonly hooks: FetcherHooks<PartitionBuffer>;
  /** Topics whose leaders are to be looked up (followed anew, or refused by their broker). */
  private readonly toLocate = new Set<string>();
  private locating: Promise<void> | undefined;
  private locateTimer: NodeJS.Timeout | undefined;
  /** Lookups failed in a row (the next one waits longer; the first failure is logged, and the recovery). */
  private lookupFailures = 0;
  private stopped = false;
  /** Counts the records' arrivals and the topics forgotten: a topic this tail called empty stays so while it stays the same (Broker.knownEmptyAll). */
  changes = 0;

  constructor(private readonly options: InboxTailOptions) {
    this.cluster = wireClusterOf(options.kafka);
    this.hooks = {
      partitionOf: (topic, partition) => this.buffers.get(topic)?.get(partition),
      received: (p, records) => this.insert(p, records),
      refused: (p, errorCode) => void this.refused(p, errorCode),
      failed: (partitions) => {
        for (const p of partitions) p.fetcher = undefined;
        this.locateLater(partitions.map((p) => p.topic));
      },
    };
  }

  /**
   * Resolves once the topic is followed and every record it held when this was called has been
   * fetched (or 10 s passed). `start.floors` says which offsets are popped already, so a new topic is
   * not fetched from its beginning; `start.highs` where each partition ended when this was called.
   */
  follow(topic: string, start: FollowStart): Promise<void> {
    return this.followMany([[topic, start]]);
  }

  /** Follows every topic given (one leader lookup for them all); resolves as `follow` does, once all are caught up. */
  async followMany(entries: ReadonlyArray<readonly [topic: string, start: FollowStart]>): Promise<void> {
    const fresh = entries.filter(([topic]) => !this.followed.has(topic));
    if (fresh.length === 0) return;
    const added: string[] = [];
    for (const [topic, { floors }] of fresh) {
      if (this.wanted.has(topic)) continue;
      this.wanted.add(topic);
      this.startAt.set(topic, new Map(floors));
      added.push(topic);
    }
    if (added.length > 0) void this.locate(added);
    const deadline = Date.now() + CATCH_UP_TIMEOUT_MS;
    const caughtUp = () =>
      fresh.every(
        ([topic, { floors, highs }]) =>
          !this.wanted.has(topic) ||
          [...highs].every(([partition, high]) => {
            const fetched = this.buffers.get(topic)?.get(partition)?.next ?? 0n;
            return fetched >= high || (floors.get(partition) ?? 0n) >= high;
          }),
      );
    while (!caughtUp() && Date.now() < deadline && !this.stopped) await new Promise((resolve) => setTimeout(resolve, 5));
    for (const [topic] of fresh) if (this.wanted.has(topic)) this.followed.add(topic);
  }

  follows(topic: string): boolean {
    return this.followed.has(topic);
  }

  /** Stops following the topics and forgets their records (they were deleted). */
  async unfollow(topics: readonly string[]): Promise<void> {
    for (const topic of topics) this.forget(topic);
  }

  /** The buffered partitions of a topic (empty when not followed). */
  partitions(topic: string): ReadonlyMap<number, PartitionBuffer> {
    return this.buffers.get(topic) ?? NO_PARTITIONS;
  }

  /** Forgets records that were popped; resumes a partition that had paused on a full buffer. */
  drop(topic: string, partition: number, isGone: (record: ConsumedRecord) => boolean): void {
    const buffer = this.buffers.get(topic)?.get(partition);
    if (!buffer) return;
    buffer.records = buffer.records.filter((record) => !isGone(record));
    if (buffer.paused && buffer.records.length < this.options.maxBuffered / 2) {
      buffer.paused = false;
      buffer.fetcher?.poke();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.locateTimer);
    const fetchers = [...this.fetchers.values()];
    // The fetches in flight fail at once rather than wait out their long poll.
    const stopping = Promise.all(fetchers.map((fetcher) => fetcher.stop()));
    await this.cluster.disconnect().catch(() => undefined);
    await stopping;
    await this.locating?.catch(() => undefined);
    // A lookup under way at the first disconnect may have connected again.
    await this.cluster.disconnect().catch(() => undefined);
  }

  /** A deleted topic: no longer fetched, its records forgotten. */
  private forget(topic: string): void {
    this.changes++;
    for (const buffer of this.buffers.get(topic)?.values() ?? []) buffer.fetcher?.remove(buffer);
    this.wanted.delete(topic);
    this.followed.delete(topic);
    this.startAt.delete(topic);
    this.buffers.delete(topic);
    this.toLocate.delete(topic);
  }

  /** Looks up the leaders of these topics (with any others waiting) and has their loops fetch them. */
  private locate(topics: readonly string[]): Promise<void> {
    for (const topic of topics) this.toLocate.add(topic);
    // Cleared by a callback (always after the assignment), not inside the run, which may end at
    // once; topics asked for between the run's end and the callback get a run of their own.
    this.locating ??= this.locateAll().finally(() => {
      this.locating = undefined;
      if (this.toLocate.size > 0 && !this.stopped) void this.locate([]);
    });
    return this.locating;
  }

  private async locateAll(): Promise<void> {
    while (this.toLocate.size > 0 && !this.stopped) {
      const batch = [...this.toLocate].filter((topic) => this.wanted.has(topic));
      this.toLocate.clear();
      if (batch.length > 0) await this.assign(batch).catch((error: unknown) => this.options.log.warn({ err: error }, 'kafka inbox tail could not follow topics'));
    }
  }

  private locateLater(topics: readonly string[]): void {
    for (const topic of topics) this.toLocate.add(topic);
    if (this.stopped || this.locateTimer) return;
    this.locateTimer = setTimeout(() => {
      this.locateTimer = undefined;
      void this.locate([]);
    }, Math.min(LOOK_UP_AGAIN_MS * 2 ** this.lookupFailures, LOOK_UP_AGAIN_MAX_MS));
  }

  /** One Metadata request for the topics; each partition goes to its leader's fetch loop. */
  private async assign(topics: string[]): Promise<void> {
    let leaders;
    try {
      try {
        leaders = await this.cluster.leadersOf(topics);
      } catch (error) {
        if (!isUnknownTopic(error)) throw error;
        // A topic was deleted (by this process or another): dropped, and the others looked up.
        const existing = new Set(await this.options.existing(topics));
        for (const topic of topics) if (!existing.has(topic)) this.forget(topic);
        const left = topics.filter((topic) => existing.has(topic));
        leaders = left.length > 0 ? await this.cluster.leadersOf(left) : [];
      }
    } catch (error) {
      if (this.lookupFailures === 0) this.options.log.warn({ err: error, topics: topics.length }, 'kafka inbox tail could not look up leaders; trying again');
      this.lookupFailures = Math.min(this.lookupFailures + 1, 10);
      return this.locateLater(topics);
    }
    if (this.lookupFailures > 0) this.options.log.info({ topics: topics.length }, 'kafka inbox tail looked up leaders again');
    this.lookupFailures = 0;
    const leaderless: string[] = [];
    for (const { topic, partitions } of leaders) {
      if (!this.wanted.has(topic)) continue;
      let buffers = this.buffers.get(topic);
      if (!buffers) this.buffers.set(topic, (buffers = new Map()));
      for (const { partition, leader } of partitions) {
        let buffer = buffers.get(partition);
        if (!buffer) {
          const next = this.startAt.get(topic)?.get(partition) ?? 0n;
          buffers.set(partition, (buffer = { topic, partition, records: [], next, paused: false, fetcher: undefined }));
        }
        if (leader < 0) {
          leaderless.push(topic);
          continue;
        }
        const fetcher = this.fetcherOf(leader);
        if (buffer.fetcher === fetcher && fetcher.has(buffer)) continue;
        buffer.fetcher?.remove(buffer);
        buffer.fetcher = fetcher;
        fetcher.add(buffer);
      }
    }
    if (leaderless.length > 0) this.locateLater(leaderless);
  }

  private fetcherOf(nodeId: number): BrokerFetcher<PartitionBuffer> {
    let fetcher = this.fetchers.get(nodeId);
    if (!fetcher) {
      const { maxWaitMs, log } = this.options;
      this.fetchers.set(nodeId, (fetcher = new BrokerFetcher({ nodeId, cluster: this.cluster, maxWaitMs, hooks: this.hooks, log })));
    }
    return fetcher;
  }

  /** A partition its broker refused: out of range starts again at its earliest offset; anything else, its leader is looked up again. */
  private async refused(p: PartitionBuffer, errorCode: number): Promise<void> {
    const fetcher = p.fetcher;
    p.fetcher = undefined;
    if (errorCode === OFFSET_OUT_OF_RANGE && fetcher) {
      try {
        const broker = await this.cluster.broker(fetcher.nodeId);
        const earliest = await broker.earliestOffset(p.topic, p.partition);
        if (this.buffers.get(p.topic)?.get(p.partition) !== p || p.fetcher !== undefined) return;
        // Records below it were deleted by retention (or the log was cut back): read from the earliest kept.
        this.options.log.info({ earliest: String(earliest), from: String(p.next) }, 'kafka inbox tail partition out of range; reading from its earliest offset');
        p.next = earliest;
        p.fetcher = fetcher;
        fetcher.add(p);
        return;
      } catch (error) {
        this.options.log.warn({ err: error }, 'kafka inbox tail could not find a partition\'s earliest offset');
      }
    }
    this.locateLater([p.topic]);
  }

  private insert(buffer: PartitionBuffer, records: readonly WireRecord[]): void {
    const port = this.options.portTopic(buffer.topic);
    const before = buffer.records.length;
    for (const record of records) {
      const offset = BigInt(record.offset);
      if (offset < buffer.next) continue; // a batch that began before the position
      if (!record.isControlRecord) buffer.records.push(fromKafkaMessage(port, buffer.partition, record));
      buffer.next = offset + 1n;
    }
    if (!buffer.paused && buffer.records.length >= this.options.maxBuffered) buffer.paused = true;
    if (buffer.records.length > before) {
      this.changes++;
      this.options.arrived?.(port);
    }
  }
}
