import type { Logger } from 'pino';
import { categoryOf, type EventStore, type Subscription } from '../../infra/event-store/port.ts';
import type { Projection } from '../../projections/projection.ts';

/**
 * Feeds read models from the event store: replays their categories from event 0 at start, then
 * follows new commits (also those of other processes on the same store). `catchUp()` after an
 * append gives read-your-own-write. A store failure stops the subscription; the runner resumes
 * from the last applied position after a pause, and `healthy` says whether it is following.
 */
export interface ProjectionRunner {
  /** Global position of the last event applied. */
  readonly position: bigint;
  readonly healthy: boolean;
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}

export const startProjectionRunner = async (store: EventStore, projections: readonly Projection[], log: Logger): Promise<ProjectionRunner> => {
  let position = 0n;
  let current: Subscription | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let delay = 50;
  const categories = [...new Set(projections.flatMap((p) => p.categories))];

  const subscribe = () => {
    current = store.subscribe({
      after: position,
      filter: { categories },
      handler: (events) => {
        for (const event of events) {
          const category = categoryOf(event.streamName);
          for (const projection of projections) if (projection.categories.includes(category)) projection.apply(event);
          position = event.globalPosition;
        }
        delay = 50;
      },
      onError: (error) => {
        log.error({ err: error, retryInMs: delay }, 'projection runner failed; resuming');
        current = undefined;
        if (stopped) return;
        retry = setTimeout(() => {
          try {
            subscribe();
          } catch (e) {
            log.error({ err: e }, 'projection runner could not resume');
          }
        }, delay);
        delay = Math.min(delay * 2, 2000);
      },
    });
  };

  subscribe();
  await current!.catchUp();
  return {
    get position() {
      return position;
    },
    get healthy() {
      return current !== undefined;
    },
    catchUp: async () => {
      if (!current) throw new Error('The read models are not following the event store');
      await current.catchUp();
    },
    stop: async () => {
      stopped = true;
      if (retry) clearTimeout(retry);
      await current?.stop();
    },
  };
};
