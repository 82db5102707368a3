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
 * `everyMs` once `minEvents` events changed the models since the last one, or once `quietMs` passed
 * since the last one if fewer did (any), and at stop, unless `save` is false (a thread whose
 * models are a part of another thread's, which writes the file: it only restores from it). The
 * snapshot is what a restart need not replay: a few events replay in no time, while a snapshot of
 * 10,000 tenants is tens of MB of JSON (session 30: the statistics' 14 MB, written every 30 s for
 * the odd webhook attempt, were a third of an idle pipeline's work).
 */

export interface SnapshotOptions {
  file: string;
  everyMs: number;
  /** Whether this runner writes the file (default true). */
  save?: boolean;
  /** Events since the last snapshot that make the next tick write one (default 10,000). */
  minEvents?: number;
  /** With fewer events, a snapshot once this long has passed since the last (default 10 minutes). */
  quietMs?: number;
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

  /** Events applied since the last snapshot, and when that was. */
  let unsaved = 0;
  let savedAt = Date.now();
  const save = (force: boolean) => {
    if (!snapshots || snapshots.save === false || !checkpoint || checkpoint.position === saved) return;
    if (!force && unsaved < (snapshots.minEvents ?? 10_000) && Date.now() - savedAt < (snapshots.quietMs ?? 600_000)) return;
    try {
      saveSnapshot(snapshots.file, projections, checkpoint);
      saved = checkpoint.position;
      unsaved = 0;
      savedAt = Date.now();
    } catch (error) {
      log.warn({ err: error }, 'read-model snapshot not written');
    }
  };
  const saver = snapshots && snapshots.save !== false ? setInterval(() => save(false), snapshots.everyMs) : undefined;
  saver?.unref();

  const subscription = await startResilientSubscription(store, {
    filter: { categories },
    resumeAfter: () => checkpoint?.position ?? 0n,
    handler: (events) => {
      for (const event of events) checkpoint = applyEvent(projections, event);
      unsaved += events.length;
    },
    onFailure: (error, retryInMs) => log.error({ err: error, retryInMs }, 'projection runner failed; resuming'),
    minDelayMs: 50,
    maxDelayMs: 2000,
  });

  const stop = async () => {
    if (saver) clearInterval(saver);
    await subscription.stop();
    save(true);
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
