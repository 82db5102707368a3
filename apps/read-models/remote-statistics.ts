/**
 * The statistics of the model in the delivery pipeline's thread (role `all`), for the pages the
 * API thread serves: a query is a message to the thread and its answer; a page that follows a
 * user's figures registers here (bounded as the model bounds them), and the thread is asked to
 * tell this thread of that user's changes only while someone here listens.
 */
import { StatisticsListeners, undoneOnce, type StatisticsListener, type Subscription } from '../../projections/statistics/listeners.ts';
import type { StatisticsAnswer, StatisticsQuery, StatisticsSource } from './statistics-model.ts';

/** What the pipeline thread offers for it (apps/pipeline/pipeline-thread.ts); it watches again after a restart. */
export interface StatisticsChannel {
  query(query: StatisticsQuery): Promise<unknown>;
  watch(userId: string): void;
  unwatch(userId: string): void;
}

export const remoteStatistics = (channel: () => StatisticsChannel | undefined): StatisticsSource & { changed(userId: string, appIds: readonly string[]): void } => {
  const listeners = new StatisticsListeners();
  const watched = new Map<string, number>();
  return {
    query: async <Q extends StatisticsQuery>(query: Q) => {
      const current = channel();
      if (!current) throw new Error('the statistics are starting');
      return (await current.query(query)) as StatisticsAnswer<Q>;
    },
    onChange: (userId: string, listener: StatisticsListener): Subscription => {
      const subscription = listeners.subscribe(userId, listener);
      if (!subscription.ok) return subscription;
      const count = (watched.get(userId) ?? 0) + 1;
      watched.set(userId, count);
      if (count === 1) channel()?.watch(userId);
      return undoneOnce(() => {
        subscription.unsubscribe();
        const left = (watched.get(userId) ?? 1) - 1;
        if (left > 0) watched.set(userId, left);
        else {
          watched.delete(userId);
          channel()?.unwatch(userId);
        }
      });
    },
    /** A change the thread told of. */
    changed: (userId: string, appIds: readonly string[]) => {
      for (const appId of appIds) listeners.changed(userId, appId);
    },
  };
};
