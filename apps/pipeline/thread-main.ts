import { parentPort, workerData } from 'node:worker_threads';
import { startParts, type RunningRelay } from '../boot/runtime.ts';
import type { Config } from '../boot/config.ts';
import { createLogger } from '../boot/logger.ts';
import type { FromPipeline, ToPipeline } from './thread-messages.ts';

/**
 * The delivery pipeline's worker thread (role `all`): publisher, delivery worker, gateway and
 * provisioner on stores of its own, the same parts `--role delivery` and `--role gateway` run,
 * without an HTTP server. It answers metric requests and stops when told to.
 */
const port = parentPort!;
const { config } = workerData as { config: Config };
const say = (message: FromPipeline) => port.postMessage(message);

let relay: RunningRelay;
try {
  relay = await startParts(config, { http: 'none', delivery: true, gateway: true }, { log: createLogger(config.LOG_LEVEL).child({ thread: 'pipeline' }) });
} catch (error) {
  const { name, message } = error instanceof Error ? error : new Error(String(error));
  say({ type: 'failed', name, message });
  process.exit(1); // in a worker thread: ends this thread only
}

port.on('message', (message: ToPipeline) => {
  switch (message.type) {
    case 'metrics':
      void relay.ctx.metrics.registry.getMetricsAsJSON().then((snapshot) => say({ type: 'metrics', id: message.id, snapshot }));
      return;
    case 'stop':
      relay.close().then(
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
