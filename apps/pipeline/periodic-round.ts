import type { Logger } from 'pino';

export interface PeriodicRound {
  /** One round now, or the one under way (rounds never overlap). */
  check(): Promise<void>;
  /** No more rounds; resolves once the one under way has ended. */
  stop(): Promise<void>;
}

/**
 * Runs `round` every `intervalMs`, one at a time: a round that fails is logged (`failed`) and the
 * next interval tries again. The timer does not keep the process alive.
 */
export const startPeriodicRound = (round: () => Promise<void>, intervalMs: number, log: Logger, failed: string): PeriodicRound => {
  let running: Promise<void> | undefined;
  let stopped = false;
  const check = () => {
    running ??= round()
      .catch((error: unknown) => log.error({ err: error }, failed))
      .finally(() => (running = undefined));
    return running;
  };
  const timer = setInterval(() => {
    if (!stopped) void check();
  }, intervalMs);
  timer.unref();
  return {
    check,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
};
