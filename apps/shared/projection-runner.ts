import type { Logger } from 'pino';
import type { EventStore, Subscription } from '../../infra/event-store/port.ts';
import type { Projection } from '../../projections/projection.ts';
import { applyEvent, categoriesOf } from './projection-feed.ts';
import { restoreSnapshot, saveSnapshot, type Checkpoint } from './projection-snapshots.ts';

/**
 * Feeds read models from the event store: restores their checkpointed snapshot (or starts from
 * event 0), replays their categories from there, then follows new commits (also those of other
 * processes on the same store). `catchUp()` after an append gives read-your-own-write. A store
 * failure stops the subscription; the runner resumes from the last applied position after a
 * pause, and `healthy` says whether it is following. The snapshot is written every
 * `snapshotEveryMs` when the models changed, and at stop.
 */
export interface ProjectionRunner {
  /** Global position of the last event applied. */
  readonly position: bigint;
  readonly healthy: boolean;
  catchUp(): Promise<void>;
  stop(): Promise<void>;
}

export interface SnapshotOptions {
  file: string;
  everyMs: number;
}

export const startProjectionRunner = async (
  store: EventStore,
  projections: readonly Projection[],
  log: Logger,
  snapshots?: SnapshotOptions,
): Promise<ProjectionRunner> => {
  let checkpoint: Checkpoint | undefined = snapshots ? await restoreSnapshot(snapshots.file, store, projections) : undefined;
  let saved = checkpoint?.position ?? 0n;
  if (checkpoint) log.info({ position: checkpoint.position.toString() }, 'read models restored from their snapshot');
  let current: Subscription | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let delay = 50;
  const categories = categoriesOf(projections);

  const save = () => {
    if (!snapshots || !checkpoint || checkpoint.position === saved) return;
    try {
      saveSnapshot(snapshots.file, projections, checkpoint);
      saved = checkpoint.position;
    } catch (error) {
      log.warn({ err: error }, 'read-model snapshot not written');
    }
  };
  const saver = snapshots ? setInterval(save, snapshots.everyMs) : undefined;
  saver?.unref();

  const subscribe = () => {
    current = store.subscribe({
      after: checkpoint?.position ?? 0n,
      filter: { categories },
      handler: (events) => {
        for (const event of events) checkpoint = applyEvent(projections, event);
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
      return checkpoint?.position ?? 0n;
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
      if (saver) clearInterval(saver);
      await current?.stop();
      save();
    },
  };
};
