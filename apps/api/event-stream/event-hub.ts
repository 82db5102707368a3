import type { Logger } from 'pino';
import type { RecordedEvent, Subscription } from '../../../infra/event-store/port.ts';
import type { EventHistory } from './event-history.ts';

/**
 * One live feed for every open event stream of this process: a single store subscription whose
 * events are handed to the streams whose tags they carry, instead of one subscription (and one
 * store query per commit) per stream. A stream that has not caught up yet collects what the hub
 * hands it in a bounded buffer while it reads its own history in pages (see attach); a stream
 * whose credential is deleted, or that loses one of its apps, is closed at the event that says
 * so, before anything after it.
 */
export interface HubStream {
  readonly credentialId: string;
  readonly tags: ReadonlySet<string>;
  /** The app ids of the stream's credential (closed when one is deleted). */
  readonly appIds: ReadonlySet<string>;
  /** An event for the stream, in order, after everything it was handed before. */
  receive(event: RecordedEvent): void;
  /** The stream must end now (its credential or one of its apps is gone, or the hub stopped). */
  revoke(why: string): void;
}

export interface Attachment {
  /** Events at or below this position were handed out before the stream attached: it reads them from the store itself. */
  readonly from: bigint;
  detach(): void;
}

type Tagger = (event: RecordedEvent) => readonly string[];

/** How long the hub keeps following the store after its last stream ended (a client that reconnects finds it running). */
const IDLE_STOP_MS = 10_000;

export class EventHub {
  private subscription: Subscription | undefined;
  private starting: Promise<void> | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private position = 0n;
  private readonly byTag = new Map<string, Set<HubStream>>();
  private readonly streams = new Set<HubStream>();

  constructor(
    private readonly history: EventHistory,
    private readonly tagsOf: Tagger,
    private readonly log: Logger,
    /** After the last stream ends, the subscription stops this much later unless a stream came meanwhile: nobody reads every new event for nothing. */
    private readonly idleStopMs = IDLE_STOP_MS,
  ) {}

  get size(): number {
    return this.streams.size;
  }

  /**
   * Hands the stream every matching event after `from` (the hub's position now); the stream reads
   * what is at or below `from` from the store. The hub must have started.
   */
  attach(stream: HubStream): Attachment {
    if (!this.subscription) throw new Error('The event hub is not running');
    clearTimeout(this.idleTimer);
    this.streams.add(stream);
    for (const tag of stream.tags) {
      let set = this.byTag.get(tag);
      if (!set) this.byTag.set(tag, (set = new Set()));
      set.add(stream);
    }
    let attached = true;
    return {
      from: this.position,
      detach: () => {
        if (!attached) return;
        attached = false;
        this.remove(stream);
      },
    };
  }

  async stop(): Promise<void> {
    clearTimeout(this.idleTimer);
    const subscription = this.subscription;
    this.subscription = undefined;
    this.starting = undefined;
    for (const stream of [...this.streams]) stream.revoke('the server is shutting down');
    await subscription?.stop();
  }

  /** Whether the hub follows the store now. */
  get running(): boolean {
    return this.subscription !== undefined;
  }

  private remove(stream: HubStream): void {
    if (!this.streams.delete(stream)) return;
    for (const tag of stream.tags) {
      const set = this.byTag.get(tag);
      set?.delete(stream);
      if (set?.size === 0) this.byTag.delete(tag);
    }
    if (this.streams.size === 0) this.stopWhenIdle();
  }

  private stopWhenIdle(): void {
    clearTimeout(this.idleTimer);
    this.idleTimer = setTimeout(() => {
      if (this.streams.size > 0 || this.subscription === undefined) return;
      const subscription = this.subscription;
      this.subscription = undefined;
      this.starting = undefined;
      void subscription.stop().catch((error: unknown) => this.log.warn({ err: error }, 'event stream hub: the idle subscription did not stop cleanly'));
    }, this.idleStopMs);
    this.idleTimer.unref();
  }

  /** Starts the subscription unless it runs (rejects when the store cannot be read). */
  start(): Promise<void> {
    this.starting ??= (async () => {
      this.position = await this.history.head();
      // A subscription stopped while idle may still hand over a batch in flight: only the current one counts.
      const subscription: Subscription = this.history.follow(
        this.position,
        (events) => {
          if (this.subscription !== subscription) return;
          for (const event of events) this.dispatch(event);
        },
        (error) => {
          if (this.subscription !== subscription) return;
          // Every stream ends (its client reconnects with Last-Event-ID); the next stream starts a new subscription.
          this.log.error({ err: error }, 'event stream hub: subscription failed');
          this.subscription = undefined;
          this.starting = undefined;
          for (const stream of [...this.streams]) stream.revoke('the event store failed');
        },
      );
      this.subscription = subscription;
    })().catch((error: unknown) => {
      this.starting = undefined;
      throw error;
    });
    return this.starting;
  }

  private dispatch(event: RecordedEvent): void {
    this.position = event.globalPosition;
    const data = event.data as { credentialId?: unknown; appId?: unknown };
    if (event.type === 'CredentialDeleted') {
      for (const stream of [...this.streams]) if (stream.credentialId === data.credentialId) stream.revoke('the key was deleted');
    } else if (event.type === 'AppDeleted') {
      for (const stream of [...this.streams]) if (typeof data.appId === 'string' && stream.appIds.has(data.appId)) stream.revoke('an app of the key was deleted');
    }
    const seen = new Set<HubStream>();
    for (const tag of this.tagsOf(event)) {
      for (const stream of this.byTag.get(tag) ?? []) {
        if (seen.has(stream)) continue;
        seen.add(stream);
        stream.receive(event);
      }
    }
  }
}
