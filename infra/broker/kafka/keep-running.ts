import type { Consumer } from "kafkajs";
import type { Logger } from "pino";

export interface KeptRunning {
  /** Runs the consumer the first time. */
  start(): void;
  /** Call when kafkajs reports a crash it does not restart from: the consumer is run again after a pause. */
  crashed(): void;
  /** The run in progress (what `stop` awaits after disconnecting). */
  running(): Promise<void>;
  /** No more restarts (the owner stops). */
  cancel(): void;
}

/**
 * kafkajs restarts a crashed consumer only after an error it counts as retriable. One it does not
 * (its group coordinator not found while the broker is down, once its retries are spent) leaves
 * the consumer disconnected for good, and with it Relay's deliveries or role leases until a
 * restart: Kafka coming back after an outage must be enough. This connects and runs the consumer
 * again after `initialDelayMs`, doubling up to `maxDelayMs` while the broker still refuses the
 * connection, until `stopping()`. kafkajs keeps the consumer's subscriptions across a disconnect.
 */
export const keepRunning = (
  consumer: Consumer,
  run: () => Promise<void>,
  options: {
    readonly stopping: () => boolean;
    readonly log: Logger;
    readonly context: Record<string, unknown>;
    readonly initialDelayMs?: number;
    readonly maxDelayMs?: number;
  },
): KeptRunning => {
  const initialDelayMs = options.initialDelayMs ?? 1_000;
  const maxDelayMs = options.maxDelayMs ?? 10_000;
  let delayMs = initialDelayMs;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;

  const schedule = (): void => {
    if (options.stopping() || timer !== undefined) return;
    timer = setTimeout(() => void attempt(), delayMs);
    delayMs = Math.min(delayMs * 2, maxDelayMs);
  };
  const attempt = async (): Promise<void> => {
    timer = undefined;
    if (options.stopping()) return;
    try {
      await consumer.connect();
    } catch (error) {
      options.log.warn(
        { ...options.context, err: error, retryInMs: delayMs },
        "kafka consumer: not started again yet, the broker is unreachable",
      );
      return schedule();
    }
    if (options.stopping()) return;
    delayMs = initialDelayMs;
    options.log.info(
      options.context,
      "kafka consumer: started again after a crash kafkajs does not restart from",
    );
    running = run();
  };

  return {
    start: () => {
      running = run();
    },
    crashed: schedule,
    running: () => running,
    cancel: () => {
      if (timer !== undefined) clearTimeout(timer);
      timer = undefined;
    },
  };
};
