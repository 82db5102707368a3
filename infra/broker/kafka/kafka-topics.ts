import type { Admin, ITopicConfig } from 'kafkajs';
import type { TopicPolicy } from '../port.ts';
import { isUnknownTopic, type LazyClient } from './kafka-clients.ts';

export interface KafkaTopicsOptions {
  readonly admin: LazyClient<Admin>;
  /** The policy of a topic, by its Kafka name. */
  readonly policy: (kafkaTopic: string) => TopicPolicy;
  /** Replication factor of created topics (undefined: the broker's `default.replication.factor`). */
  readonly replicationFactor?: number | undefined;
  /** `max.message.bytes` of created topics: the largest record batch the broker takes for them. */
  readonly maxMessageBytes: number;
}

/** How long `delete` waits for the cluster's metadata to stop naming a deleted topic. */
const DELETE_SETTLE_MS = 15_000;
/** Topics created elsewhere are learnt by listing, at most this often. */
const LIST_EVERY_MS = 200;
/**
 * `absentUntil` lists again once the last listing is this old, so that a listing in good time
 * keeps its window open while polls keep asking (else every poll in the gap pops its topics).
 */
const RELIST_AFTER_MS = LIST_EVERY_MS / 2;
/** A segment is rolled at least this often when a retention is set (Kafka deletes whole segments). */
const MAX_SEGMENT_MS = 86_400_000;

/**
 * The topics of the broker as this process knows them (by their Kafka names): created on first use
 * with what the application's TopicPolicy says, listed to learn those created elsewhere, and
 * deleted. Every admin call goes through `withAdmin`, which replaces an admin client whose
 * metadata names a topic deleted since (kafkajs then fails all its requests) and tries once more.
 */
export class KafkaTopics {
  private readonly known = new Set<string>();
  private listedAt = 0;
  /** When the last listing that completed was asked for (0: none since the last `forget`). */
  private listingAskedAt = 0;
  /** The listing under way, shared by whoever asks meanwhile. */
  private listing: Promise<void> | undefined;
  /** Counts forgets: a listing asked before one is not learnt from. */
  private forgets = 0;

  constructor(private readonly options: KafkaTopicsOptions) {}

  /** How many forgets so far: what `absentUntil` answered before the last one no longer holds. */
  get forgotten(): number {
    return this.forgets;
  }

  /**
   * Runs an admin operation. One that failed on a missing topic replaces the client and forgets
   * what this process knew of topics; with `again`, it then runs once more on the fresh client
   * (an operation on one topic passes false, and asks `exists` whether its own topic is gone).
   */
  async withAdmin<T>(operation: (admin: Admin) => Promise<T>, again = true): Promise<T> {
    try {
      return await operation(await this.options.admin.get());
    } catch (error) {
      if (!isUnknownTopic(error)) throw error;
      this.options.admin.reset();
      this.forget();
      if (!again) throw error;
      try {
        return await operation(await this.options.admin.get());
      } catch (again) {
        // The operation's own topic is gone: drop the client it poisoned too, and say so.
        if (isUnknownTopic(again)) this.options.admin.reset();
        throw again;
      }
    }
  }

  /** The configuration a topic is created with. */
  configOf(topic: string): { numPartitions: number; configEntries: ITopicConfig['configEntries'] } {
    const policy = this.options.policy(topic);
    const configEntries = [{ name: 'max.message.bytes', value: String(this.options.maxMessageBytes) }];
    if (policy.retentionMs !== undefined) {
      configEntries.push({ name: 'retention.ms', value: String(policy.retentionMs) });
      // Kafka deletes closed segments only: roll one at least every retention period.
      configEntries.push({ name: 'segment.ms', value: String(Math.min(policy.retentionMs, MAX_SEGMENT_MS)) });
    }
    return { numPartitions: policy.partitions, configEntries };
  }

  /** Creates the topics this process does not know to exist (a topic that exists is left as it is). */
  async ensure(topics: readonly string[]): Promise<void> {
    const missing = [...new Set(topics)].filter((topic) => !this.known.has(topic));
    if (missing.length === 0) return;
    const wanted = missing.map((topic) => ({ topic, replicationFactor: this.options.replicationFactor ?? -1, ...this.configOf(topic) }));
    await this.withAdmin((admin) => admin.createTopics({ waitForLeaders: true, topics: wanted }));
    for (const topic of missing) this.known.add(topic);
  }

  /** Whether the topic exists (as far as a listing at most 200 ms old, or the one under way, says). */
  async exists(topic: string): Promise<boolean> {
    if (this.known.has(topic)) return true;
    if (this.listing || Date.now() - this.listedAt > LIST_EVERY_MS) await this.list();
    return this.known.has(topic);
  }

  /** Lists the broker's topics (or joins the listing under way) and learns their names. */
  private list(): Promise<void> {
    if (this.listing) return this.listing;
    const askedAt = Date.now();
    const forgets = this.forgets;
    this.listedAt = askedAt;
    const listing = this.withAdmin((admin) => admin.listTopics())
      .then((names) => {
        for (const name of names) this.known.add(name);
        // Unless a forget came meanwhile (it wants a listing asked after it to say what is absent).
        if (this.forgets === forgets) this.listingAskedAt = askedAt;
      })
      .finally(() => {
        if (this.listing === listing) this.listing = undefined;
      });
    this.listing = listing;
    return listing;
  }

  /**
   * Until when `exists` would answer false without asking (0, at most `now`, when it might not): a
   * listing asked for at most 200 ms ago did not name the topic, nor did this process create it
   * since. Synchronous (an empty poll of an app that never received a message has no topic to pop:
   * Broker.knownEmpty). Once that listing is half as old, it starts the next one, so that steady
   * polls keep finding the answer here; the answer ends no later than that moment, so that whoever
   * remembers it asks again in time to start the listing (Broker.knownEmptyAll).
   */
  absentUntil(topic: string, now: number): number {
    // First: most topics asked about exist, and their answer needs no listing.
    if (this.listingAskedAt === 0 || this.known.has(topic)) return 0;
    if (now - this.listedAt > RELIST_AFTER_MS && !this.listing) {
      // A listing that fails leaves the window to close: the pops then list themselves and report it.
      this.list().catch(() => undefined);
    }
    if (now - this.listingAskedAt > LIST_EVERY_MS) return 0;
    return Math.min(this.listingAskedAt + LIST_EVERY_MS, this.listedAt + RELIST_AFTER_MS) + 1;
  }

  /** Deletes those of the topics that exist, and resolves once the cluster's metadata no longer names them. */
  async delete(topics: readonly string[]): Promise<void> {
    const wanted = new Set(topics);
    this.forget(wanted);
    const present = async () => (await this.withAdmin((admin) => admin.listTopics())).filter((name) => wanted.has(name));
    const doomed = await present();
    if (doomed.length > 0) {
      try {
        await this.withAdmin((admin) => admin.deleteTopics({ topics: doomed, timeout: DELETE_SETTLE_MS }));
      } catch (error) {
        if (!isUnknownTopic(error)) throw error; // another process deleted them first
      }
    }
    const deadline = Date.now() + DELETE_SETTLE_MS;
    let left = doomed;
    while (left.length > 0 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      left = await present();
    }
    if (left.length > 0) throw new Error(`Kafka still lists ${left.join(', ')} ${DELETE_SETTLE_MS} ms after deleting them`);
    this.forget(wanted);
  }

  /** Forgets what this process knew of the topics (all of them when none are given). */
  forget(topics?: Iterable<string>): void {
    if (topics === undefined) this.known.clear();
    else for (const topic of topics) this.known.delete(topic);
    this.listedAt = 0;
    this.listingAskedAt = 0;
    this.forgets += 1;
    // A listing under way was asked before this: the next one must be asked after.
    this.listing = undefined;
  }
}
