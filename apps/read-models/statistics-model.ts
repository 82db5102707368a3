/**
 * The statistics read model (projections/statistics) for the dashboard's statistics pages: fed by
 * a projection runner of its own, in the process part that serves those pages only. The other
 * read models never read message events; keeping the statistics apart means the account API's
 * read-your-own-write (`catchUp`) never waits behind them, and the delivery thread never folds them.
 * Checkpointed like the others, in a snapshot file of its own.
 */
import path from 'node:path';
import type { Logger } from 'pino';
import type { EventStore } from '../../infra/event-store/port.ts';
import { StatisticsProjection } from '../../projections/statistics/statistics-projection.ts';
import type { Config } from '../boot/config.ts';
import { startProjectionRunner, type ProjectionRunner } from './runner.ts';

export interface StatisticsModel {
  readonly statistics: StatisticsProjection;
  readonly runner: ProjectionRunner;
  stop(): Promise<void>;
}

export const statisticsSnapshotFile = (config: Pick<Config, 'dataDir' | 'EVENT_STORE'>): string => path.join(config.dataDir, `statistics.${config.EVENT_STORE}.json`);

export const startStatisticsModel = async (store: EventStore, log: Logger, file: string): Promise<StatisticsModel> => {
  const statistics = new StatisticsProjection({ onListenerError: (error) => log.warn({ err: error }, 'a statistics listener failed') });
  const runner = await startProjectionRunner(store, [statistics], log, { file, everyMs: 30_000 });
  return { statistics, runner, stop: () => runner.stop() };
};
