import type { RecordedEvent } from '../infra/event-store/port.ts';

/**
 * A read model folded from events. Projections never decide anything: they apply what happened.
 * `categories` narrows the events the runner reads for it; `apply` must ignore unknown types.
 */
export interface Projection {
  readonly name: string;
  readonly categories: readonly string[];
  apply(event: RecordedEvent): void;
}
