import type { RecordedEvent, Subscription } from '../../../infra/event-store/port.ts';

/** What the event streams read from the event store: pages of a tenant's events, and every tagged event as it comes. */
export interface EventHistory {
  /** Highest position final in the store now (a follow-less stream ends there). */
  head(): Promise<bigint>;
  /**
   * The next events after `after` carrying one of `tags`, in order, bounded in count and bytes
   * (the store filters: no other tenant's event is read).
   */
  page(after: bigint, tags: readonly string[]): Promise<RecordedEvent[]>;
  /** Every tagged event after `after`, in order, as committed: the hub's one subscription. */
  follow(after: bigint, handler: (events: RecordedEvent[]) => void, onError: (error: unknown) => void): Subscription;
}
