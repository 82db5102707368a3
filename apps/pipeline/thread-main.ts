import { parentPort, workerData } from 'node:worker_threads';
import { startParts, type RunningRelay } from '../boot/runtime.ts';
import type { Config } from '../boot/config.ts';
import { createLogger } from '../boot/logger.ts';
import type { FromPipeline, ToPipeline } from './thread-messages.ts';
import { answer, startStatisticsModel, statisticsSnapshotFile, type StatisticsModel } from '../read-models/statistics-model.ts';

/**
 * The delivery pipeline's worker thread (role `all`): publisher, delivery worker, gateway and
 * provisioner on stores of its own, the same parts `--role delivery` and `--role gateway` run,
 * without an HTTP server. It answers metric requests, holds the dashboard's statistics model (its
 * folding of every send batch stays off the API thread) and answers its questions, and stops when
 * told to.
 */
const port = parentPort!;
const { config } = workerData as { config: Config };
const say = (message: FromPipeline) => port.postMessage(message);

let relay: RunningRelay;
let statistics: StatisticsModel;
try {
  relay = await startParts(config, { http: 'none', delivery: true, gateway: true }, { log: createLogger(config.LOG_LEVEL).child({ thread: 'pipeline' }) });
  statistics = await startStatisticsModel(relay.ctx.store, relay.ctx.log.child({ component: 'statistics' }), statisticsSnapshotFile(config));
} catch (error) {
  const { name, message } = error instanceof Error ? error : new Error(String(error));
  say({ type: 'failed', name, message });
  process.exit(1); // in a worker thread: ends this thread only
}

/** The users whose changes the API thread follows (a live page is open there). */
const watching = new Map<string, () => void>();

port.on('message', (message: ToPipeline) => {
  switch (message.type) {
    case 'statistics':
      try {
        say({ type: 'statistics', id: message.id, view: answer(statistics.statistics, message.query) });
      } catch (error) {
        say({ type: 'statistics', id: message.id, error: error instanceof Error ? error.message : String(error) });
      }
      return;
    case 'statistics-watch': {
      if (watching.has(message.userId)) return;
      const subscription = statistics.statistics.onChange(message.userId, (change) => say({ type: 'statistics-changed', userId: change.userId, appIds: [...change.appIds] }));
      if (subscription.ok) watching.set(message.userId, subscription.unsubscribe);
      return;
    }
    case 'statistics-unwatch':
      watching.get(message.userId)?.();
      watching.delete(message.userId);
      return;
    case 'metrics':
      void relay.ctx.metrics.registry.getMetricsAsJSON().then((snapshot) => say({ type: 'metrics', id: message.id, snapshot }));
      return;
    case 'stop':
      Promise.all([statistics.stop(), relay.close()]).then(
        () => process.exit(0),
        (error: unknown) => {
          relay.ctx.log.error({ err: error }, 'pipeline shutdown failed');
          process.exit(1);
        },
      );
      return;
  }
});
say({ type: 'ready' });
