import { setImmediate } from 'node:timers/promises';
import { parentPort, workerData } from 'node:worker_threads';
import { startParts, type RunningRelay } from '../boot/runtime.ts';
import type { Config } from '../services/config.ts';
import { createLogger } from '../services/logger.ts';
import type { FromPipeline, ToPipeline } from './thread-messages.ts';
import { lowerThisThreadPriority } from './thread-priority.ts';
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
const log = createLogger(config.LOG_LEVEL).child({ thread: 'pipeline' });
// The code is loaded by now; the stores are opened when the API thread says (pipeline-thread.ts).
await new Promise<void>((resolve) => {
  const onStart = (message: ToPipeline) => {
    if (message.type !== 'start') return;
    port.off('message', onStart);
    resolve();
  };
  port.on('message', onStart);
});

let relay: RunningRelay;
try {
  relay = await startParts(
    config,
    { http: 'none', delivery: true, gateway: true },
    // This thread polls for other processes' commits and tells the API thread (stores.ts). Its
    // read models leave out the credentials (the API thread's) and are restored from the snapshot
    // the API thread writes.
    { log, storePolling: 'for-process', readModels: 'pipeline' },
  );
} catch (error) {
  const { name, message } = error instanceof Error ? error : new Error(String(error));
  say({ type: 'failed', name, message });
  process.exit(1); // in a worker thread: ends this thread only
}

// Lowered once the pipeline runs: a start's health waits for this thread's restore, which at the
// lowest priority got what the API thread's restore and V8's helpers left of two cores (issue 49,
// session 40). From here on it yields to the API thread, as PIPELINE_THREAD_NICE says.
const priority = lowerThisThreadPriority(config.PIPELINE_THREAD_NICE);
if (config.PIPELINE_THREAD_NICE !== 0) {
  const runsAt = priority === 'idle' ? 'SCHED_IDLE' : priority === undefined ? "the API thread's priority (not lowered here)" : `nice ${priority}`;
  log.info({ asked: config.PIPELINE_THREAD_NICE, runsAt }, `the pipeline thread runs at ${runsAt}`);
}

/** The users whose changes the API thread follows (a live page is open there), and how to stop. */
const watching = new Map<string, (() => void) | undefined>();

const follow = (model: StatisticsModel, userId: string) => {
  const subscription = model.statistics.onChange(userId, (change) => say({ type: 'statistics-changed', userId: change.userId, appIds: [...change.appIds] }));
  watching.set(userId, subscription.ok ? subscription.unsubscribe : undefined);
};

/**
 * The statistics model starts once the pipeline runs and has said so: its replay since its last
 * snapshot (the whole history the first time) must not hold deliveries or a restart's health, nor
 * must its restore, which reads and parses its snapshot without yielding (0.5–1 s at 10,000
 * users): it begins a turn of the event loop after `ready` is posted. Until it has caught up, a
 * page is told the statistics are starting.
 */
let statistics: StatisticsModel | undefined;
const startingStatistics = setImmediate()
  .then(() => startStatisticsModel(relay.ctx.store, relay.ctx.log.child({ component: 'statistics' }), statisticsSnapshotFile(config)))
  .then(
    (model) => {
      statistics = model;
      for (const userId of watching.keys()) follow(model, userId);
      return model;
    },
    (error: unknown) => {
      relay.ctx.log.error({ err: error }, 'the statistics model could not start; the statistics pages say so');
      return undefined;
    },
  );

port.on('message', (message: ToPipeline) => {
  switch (message.type) {
    case 'statistics':
      try {
        if (!statistics) throw new Error('the statistics are starting');
        say({ type: 'statistics', id: message.id, view: answer(statistics, message.query) });
      } catch (error) {
        say({ type: 'statistics', id: message.id, error: error instanceof Error ? error.message : String(error) });
      }
      return;
    case 'statistics-watch':
      if (watching.has(message.userId)) return;
      if (statistics) follow(statistics, message.userId);
      else watching.set(message.userId, undefined); // followed once the model runs
      return;
    case 'statistics-unwatch':
      watching.get(message.userId)?.();
      watching.delete(message.userId);
      return;
    case 'metrics':
      void relay.ctx.metrics.registry.getMetricsAsJSON().then((snapshot) => say({ type: 'metrics', id: message.id, snapshot }));
      return;
    case 'stop':
      Promise.all([startingStatistics.then((model) => model?.stop()), relay.close()]).then(
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
