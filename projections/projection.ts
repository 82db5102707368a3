import type { RecordedEvent } from '../infra/event-store/port.ts';

/**
 * A read model folded from events. Projections never decide anything: they apply what happened.
 * `categories` narrows the events the runner reads for it; `apply` must ignore unknown types.
 */
export interface Projection {
  readonly name: string;
  readonly categories: readonly string[];
  apply(event: RecordedEvent): void;
  /** The read model as plain JSON data (for a checkpointed snapshot). */
  snapshot(): unknown;
  /** Replaces the read model with a snapshot taken by `snapshot()`. */
  restore(snapshot: unknown): void;
}
