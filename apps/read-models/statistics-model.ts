/**
 * The statistics read model (projections/statistics) for the dashboard's statistics pages, fed by
 * a projection runner of its own, never where the public API answers sends: folding every send
 * batch there cost a fifth of the send rate. In role `all` it runs in the delivery pipeline's
 * thread (the second core), and the pages ask it through the thread's messages
 * (apps/read-models/remote-statistics.ts); a process of role `api` runs it itself. The other read
 * models never read message events, so the account API's read-your-own-write never waits behind
 * these. Checkpointed like the others, in a snapshot file of its own. The same runner feeds the
 * dashboard's message log (projections/message-log), which reads the same events.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { StatisticsWindow } from '../../domain/statistics/buckets.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { StatisticsListener, Subscription } from '../../projections/statistics/listeners.ts';
import { StatisticsProjection } from '../../projections/statistics/statistics-projection.ts';
import type { StatisticsView, UserStatisticsView } from '../../projections/statistics/views.ts';
import type { Config } from '../services/config.ts';
import { MessageLogProjection } from '../../projections/message-log/message-log-projection.ts';
import type { MessageLogFilter, MessageLogView } from '../../projections/message-log/entries.ts';
import { startProjectionRunner } from './runner.ts';
import type { ProjectionRunner } from '../services/projection-runner.ts';

/**
 * What a page asks: a user's statistics (all apps), or one app's (undefined when not theirs); or
 * one app's message log (projections/message-log), which the same runner feeds.
 */
export type StatisticsQuery =
  | { readonly scope: 'user'; readonly userId: string; readonly window: StatisticsWindow }
  | { readonly scope: 'app'; readonly userId: string; readonly appId: string; readonly window: StatisticsWindow }
  | { readonly scope: 'messages'; readonly userId: string; readonly appId: string; readonly filter: MessageLogFilter };

export type StatisticsAnswer<Q extends StatisticsQuery> = Q extends { scope: 'user' } ? UserStatisticsView : Q extends { scope: 'messages' } ? MessageLogView | undefined : StatisticsView | undefined;

/** Where the pages read statistics from: the model in this thread, or in the pipeline's. */
export interface StatisticsSource {
  /** Rejects when the model cannot answer now (its thread restarting). */
  query<Q extends StatisticsQuery>(query: Q): Promise<StatisticsAnswer<Q>>;
  onChange(userId: string, listener: StatisticsListener): Subscription;
}

export const answer = (model: Pick<StatisticsModel, 'statistics' | 'messageLog'>, query: StatisticsQuery): UserStatisticsView | StatisticsView | MessageLogView | undefined => {
  switch (query.scope) {
    case 'user':
      return model.statistics.forUser(query.userId, query.window);
    case 'app':
      return model.statistics.forApp(query.userId, query.appId, query.window);
    case 'messages':
      return model.messageLog.forApp(query.userId, query.appId, query.filter);
  }
};

export interface StatisticsModel {
  readonly statistics: StatisticsProjection;
  readonly messageLog: MessageLogProjection;
  readonly runner: ProjectionRunner;
  /** The model as a source in this thread. */
  readonly source: StatisticsSource;
  stop(): Promise<void>;
}

export const statisticsSnapshotFile = (config: Pick<Config, 'dataDir' | 'EVENT_STORE'>): string => path.join(config.dataDir, `statistics.${config.EVENT_STORE}.json`);

export const startStatisticsModel = async (store: EventStore, log: Logger, file: string): Promise<StatisticsModel> => {
  const statistics = new StatisticsProjection({ onListenerError: (error) => log.warn({ err: error }, 'a statistics listener failed') });
  const messageLog = new MessageLogProjection();
  const runner = await startProjectionRunner(store, [statistics, messageLog], log, { file, everyMs: 30_000 });
  const source: StatisticsSource = {
    query: async <Q extends StatisticsQuery>(query: Q) => answer({ statistics, messageLog }, query) as StatisticsAnswer<Q>,
    onChange: (userId, listener) => statistics.onChange(userId, listener),
  };
  return { statistics, messageLog, runner, source, stop: () => runner.stop() };
};
