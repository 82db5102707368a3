import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../services/config.ts';
import type { MetricsSnapshot } from '../services/metrics.ts';
import { RUNNING_FROM } from '../services/running-from.ts';
import type { FromPipeline, ToPipeline } from './thread-messages.ts';
import type { StatisticsChannel } from '../read-models/remote-statistics.ts';

/** The delivery pipeline of role `all`, in a worker thread of this process. */
export interface PipelineThread {
  /** The pipeline's counters, for `/metrics` (none while it is restarting or does not answer in time). */
  metrics(): Promise<MetricsSnapshot[]>;
  /** The dashboard's statistics model, which lives in this thread. */
  readonly statistics: StatisticsChannel;
  /** Told of the changes of the users `statistics.watch` named. */
  onStatisticsChanged(handler: (userId: string, appIds: readonly string[]) => void): void;
  /** Lets it finish in-flight deliveries and close its stores. */
  stop(): Promise<void>;
}

export interface PipelineThreadOptions {
  /** Wait before starting a thread again after it died (doubled on each failure, up to 30 s). Default 1000. */
  readonly restartDelayMs?: number;
  readonly metricsTimeoutMs?: number;
  /** How long a stop may take before the thread is terminated. Default 30000. */
  readonly stopTimeoutMs?: number;
  /**
   * The first thread loads its code at once and opens its stores when this resolves (role `all`:
   * once the API thread has opened them, which creates them on a first start); if it rejects, the
   * thread is ended and the start rejects with its error. Default: at once.
   */
  readonly startWhen?: Promise<void>;
}

// Run from the TypeScript sources, the thread starts with tsx registered (thread-entry.js); run
// from the build, the thread's own entry sits next to the chunk this code is in (scripts/build.mjs).
const ENTRY = RUNNING_FROM === 'sources' ? new URL('./thread-entry.js', import.meta.url) : new URL('./thread-main.js', import.meta.url);
const MAX_RESTART_DELAY_MS = 30_000;

/**
 * The pipeline thread's heap. Its garbage is short-lived JSON: per delivery it reads, decides and
 * appends a few small events. What it keeps does not grow with a backlog (every read is a bounded
 * page) but with the accounts: the read models (users, apps, groups, invoices; not the credentials,
 * which only requests read: the API thread keeps them) and the dashboard's statistics (about 200
 * bytes to 10 KB per app-messenger that had traffic within 25 hours); about 16 MB after a full
 * collection with one account while the bench's backlog drains.
 * - A young generation of PIPELINE_THREAD_YOUNG_MB (8 MB by default) instead of V8's default (up to
 *   48 MB on 64 bit): 211-214 MB of RSS after the bench's load with the default, 193 MB with 8 MB
 *   (session 5). 4 MB took another 5 MB off but cost a quarter more CPU per delivery (session 20).
 *   With many tenants the read models are large and each scavenge costs more: at 10,000 users, 32 MB
 *   took 8-16 % less CPU per send of 50 than 8 MB (session 31, docs/performance.md).
 * - An old generation of at most PIPELINE_THREAD_HEAP_MB (1 GB by default) instead of the process's
 *   (a quarter of the machine's memory, up to 4 GB): V8 lets an old generation grow to up to 4 times
 *   what survived its last full collection when its limit is 2 GB or more, and less below (about
 *   1.6 times at 1 GB). Draining the bench's backlog, the thread's heap was 66-74 MB with the
 *   process's limit and 30-39 MB with 1 GB, at the same CPU per delivery (session 20,
 *   docs/performance.md). A thread that runs out of it ends with ERR_WORKER_OUT_OF_MEMORY and is
 *   started again, as after any failure: `relay_thread_heap_bytes` shows how near it is.
 */
export const pipelineHeapLimits = (config: Pick<Config, 'PIPELINE_THREAD_HEAP_MB' | 'PIPELINE_THREAD_YOUNG_MB'>) =>
  ({ maxYoungGenerationSizeMb: config.PIPELINE_THREAD_YOUNG_MB, maxOldGenerationSizeMb: config.PIPELINE_THREAD_HEAP_MB }) as const;

/**
 * A new thread, told to open its stores and start once `startWhen` resolves; it loads its code
 * meanwhile (most of a start-up's time), alongside whatever this thread does until then. If
 * `startWhen` rejects, the thread is ended and the start rejects with that error.
 */
const spawn = (config: Config, startWhen: Promise<void> = Promise.resolve()): Promise<Worker> =>
  new Promise((resolve, reject) => {
    const worker = new Worker(ENTRY, { workerData: { config }, resourceLimits: pipelineHeapLimits(config) });
    let settled = false;
    startWhen.then(
      () => {
        if (!settled) worker.postMessage({ type: 'start' } satisfies ToPipeline);
      },
      (error: unknown) => {
        if (settled) return;
        settle(() => reject(error));
        void worker.terminate();
      },
    );
    const onMessage = (message: FromPipeline) => {
      if (message.type === 'ready') settle(() => resolve(worker));
      else if (message.type === 'failed') settle(() => reject(message.name === 'ConfigError' ? new ConfigError(message.message) : new Error(message.message)));
    };
    const onError = (error: Error) => settle(() => reject(error));
    const onExit = (code: number) => settle(() => reject(new Error(`The delivery pipeline thread exited with code ${code} while starting`)));
    const settle = (done: () => void) => {
      settled = true;
      worker.off('message', onMessage).off('error', onError).off('exit', onExit);
      done();
    };
    worker.on('message', onMessage).on('error', onError).on('exit', onExit);
  });

/**
 * Starts the pipeline thread and resolves once its parts run (rejects, as start-up does, if they
 * cannot start). A thread that dies later is logged and started again, so that a failing
 * pipeline never silently stops delivering while the API keeps accepting.
 */
export const startPipelineThread = async (config: Config, log: Logger, options: PipelineThreadOptions = {}): Promise<PipelineThread> => {
  const restartDelayMs = options.restartDelayMs ?? 1000;
  const metricsTimeoutMs = options.metricsTimeoutMs ?? 1000;
  const stopTimeoutMs = options.stopTimeoutMs ?? 30_000;
  let stopping = false;
  let worker: Worker | undefined;
  let restartTimer: NodeJS.Timeout | undefined;
  /** A thread being started again: stop() waits for it, so that it too closes its stores. */
  let restarting: Promise<void> | undefined;
  let delay = restartDelayMs;
  let nextRequest = 0;
  const pending = new Map<number, (snapshot: MetricsSnapshot | undefined) => void>();
  const statisticsAnswers = new Map<number, (message: Extract<FromPipeline, { type: 'statistics' }> | undefined) => void>();
  const watched = new Set<string>();
  let statisticsChanged: (userId: string, appIds: readonly string[]) => void = () => undefined;

  const adopt = (started: Worker) => {
    worker = started;
    started.on('message', (message: FromPipeline) => {
      if (message.type === 'metrics') pending.get(message.id)?.(message.snapshot);
      else if (message.type === 'statistics') statisticsAnswers.get(message.id)?.(message);
      else if (message.type === 'statistics-changed') statisticsChanged(message.userId, message.appIds);
    });
    // A thread started again follows the users followed before.
    for (const userId of watched) started.postMessage({ type: 'statistics-watch', userId } satisfies ToPipeline);
    started.on('error', (error) => log.error({ err: error }, 'the delivery pipeline thread failed'));
    started.on('exit', (code) => {
      worker = undefined;
      for (const answer of pending.values()) answer(undefined);
      for (const answer of statisticsAnswers.values()) answer(undefined);
      if (stopping) return;
      log.error({ code }, `the delivery pipeline thread stopped; starting it again in ${delay} ms`);
      scheduleRestart();
    });
  };

  const scheduleRestart = () => {
    restartTimer = setTimeout(() => {
      restartTimer = undefined;
      if (stopping) return;
      restarting = spawn(config)
        .then(
          (started) => {
            delay = restartDelayMs;
            log.info('the delivery pipeline thread runs again');
            adopt(started);
          },
          (error: unknown) => {
            if (stopping) return;
            delay = Math.min(delay * 2, MAX_RESTART_DELAY_MS);
            log.error({ err: error }, `the delivery pipeline thread could not start; trying again in ${delay} ms`);
            scheduleRestart();
          },
        )
        .finally(() => (restarting = undefined));
    }, delay);
  };

  adopt(await spawn(config, options.startWhen));

  return {
    statistics: {
      query: async (query) => {
        const current = worker;
        if (!current) throw new Error('the delivery pipeline thread is restarting');
        const id = nextRequest++;
        const answered = await new Promise<Extract<FromPipeline, { type: 'statistics' }> | undefined>((resolve) => {
          const timer = setTimeout(() => resolve(undefined), metricsTimeoutMs);
          statisticsAnswers.set(id, (answer) => {
            clearTimeout(timer);
            resolve(answer);
          });
          current.postMessage({ type: 'statistics', id, query } satisfies ToPipeline);
        }).finally(() => statisticsAnswers.delete(id));
        if (!answered) throw new Error('the delivery pipeline thread did not answer in time');
        if (answered.error !== undefined) throw new Error(answered.error);
        return answered.view;
      },
      watch: (userId) => {
        watched.add(userId);
        worker?.postMessage({ type: 'statistics-watch', userId } satisfies ToPipeline);
      },
      unwatch: (userId) => {
        watched.delete(userId);
        worker?.postMessage({ type: 'statistics-unwatch', userId } satisfies ToPipeline);
      },
    },
    onStatisticsChanged: (handler) => {
      statisticsChanged = handler;
    },
    metrics: async () => {
      const current = worker;
      if (!current) return [];
      const id = nextRequest++;
      const snapshot = await new Promise<MetricsSnapshot | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), metricsTimeoutMs);
        pending.set(id, (answer) => {
          clearTimeout(timer);
          resolve(answer);
        });
        current.postMessage({ type: 'metrics', id } satisfies ToPipeline);
      }).finally(() => pending.delete(id));
      return snapshot ? [snapshot] : [];
    },
    stop: async () => {
      stopping = true;
      clearTimeout(restartTimer);
      await restarting; // adopted by now if it started: stopped below like any other
      const current = worker;
      if (!current) return;
      const exited = new Promise<void>((resolve) => current.once('exit', () => resolve()));
      current.postMessage({ type: 'stop' } satisfies ToPipeline);
      const timer = setTimeout(() => {
        log.error(`the delivery pipeline thread did not stop within ${stopTimeoutMs} ms; terminating it`);
        void current.terminate();
      }, stopTimeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
};
