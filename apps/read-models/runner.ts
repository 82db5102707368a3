import type { Logger } from 'pino';
import type { EventStore } from '../../infra/event-store/port.ts';
import { startResilientSubscription } from '../../infra/event-store/resilient-subscription.ts';
import type { Projection } from '../../projections/projection.ts';
import type { ProjectionRunner } from '../services/projection-runner.ts';
import { applyEvent, categoriesOf } from './feed.ts';
import { restoreSnapshot, saveSnapshot, type Checkpoint } from './snapshots.ts';

/**
 * Feeds read models from the event store: restores their checkpointed snapshot (or starts from
 * event 0), replays their categories from there, then follows new commits (also those of other
 * processes on the same store). `catchUp()` after an append gives read-your-own-write. A store
 * failure stops the subscription; the runner resumes from the last applied position after a
 * pause (50 ms doubling to 2 s: `infra/event-store/resilient-subscription.ts`), and `healthy`
 * says whether it is following. The snapshot is written every
 * `snapshotEveryMs` when the models changed, and at stop, unless `save` is false (a thread whose
 * models are a part of another thread's, which writes the file: it only restores from it).
 */

export interface SnapshotOptions {
  file: string;
  everyMs: number;
  /** Whether this runner writes the file (default true). */
  save?: boolean;
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
  const categories = categoriesOf(projections);

  const save = () => {
    if (!snapshots || snapshots.save === false || !checkpoint || checkpoint.position === saved) return;
    try {
      saveSnapshot(snapshots.file, projections, checkpoint);
      saved = checkpoint.position;
    } catch (error) {
      log.warn({ err: error }, 'read-model snapshot not written');
    }
  };
  const saver = snapshots && snapshots.save !== false ? setInterval(save, snapshots.everyMs) : undefined;
  saver?.unref();

  const subscription = await startResilientSubscription(store, {
    filter: { categories },
    resumeAfter: () => checkpoint?.position ?? 0n,
    handler: (events) => {
      for (const event of events) checkpoint = applyEvent(projections, event);
    },
    onFailure: (error, retryInMs) => log.error({ err: error, retryInMs }, 'projection runner failed; resuming'),
    minDelayMs: 50,
    maxDelayMs: 2000,
  });

  const stop = async () => {
    if (saver) clearInterval(saver);
    await subscription.stop();
    save();
  };

  const catchUp = async () => {
    if (!subscription.following) throw new Error('The read models are not following the event store');
    await subscription.catchUp();
  };

  try {
    await catchUp();
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    get position() {
      return checkpoint?.position ?? 0n;
    },
    get healthy() {
      return subscription.following;
    },
    catchUp,
    stop,
  };
};
