import type { EventStore, Subscription } from '../../infra/event-store/port.ts';
import type { Projection } from '../../projections/projection.ts';

/**
 * Feeds read models from the event store: replays their categories from event 0 at start, then
 * follows new commits (also those of other processes on the same store). `catchUp()` after an
 * append gives read-your-own-write.
 */
export interface ProjectionRunner {
  /** Global position of the last event applied. */
  readonly position: bigint;
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}

export const startProjectionRunner = async (
  store: EventStore,
  projections: readonly Projection[],
  onError: (error: unknown) => void,
): Promise<ProjectionRunner> => {
  let position = 0n;
  const categories = [...new Set(projections.flatMap((p) => p.categories))];
  const subscription: Subscription = store.subscribe({
    after: 0n,
    filter: { categories },
    handler: (events) => {
      for (const event of events) {
        for (const projection of projections) {
          if (projection.categories.includes(event.streamName.slice(0, event.streamName.indexOf('-')))) projection.apply(event);
        }
        position = event.globalPosition;
      }
    },
    onError,
  });
  await subscription.catchUp();
  return {
    get position() {
      return position;
    },
    catchUp: () => subscription.catchUp(),
    stop: () => subscription.stop(),
  };
};
