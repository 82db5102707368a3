import type { EventStore } from '../../infra/event-store/port.ts';
import type { RelayContext } from '../services/context.ts';
import { createLogger } from '../services/logger.ts';
import { closeContext, openContext } from '../boot/runtime.ts';
import { openEventStore } from '../boot/stores.ts';
import { configFrom } from './config-options.ts';

/** Runs `work` on the stores of the configured data, quietly (logs at warn and above, to stderr). */
export const withContext = async (options: Record<string, unknown>, work: (ctx: RelayContext) => Promise<void>) => {
  const config = configFrom(options);
  const ctx = await openContext(config, createLogger(config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL));
  try {
    await work(ctx);
  } finally {
    await closeContext(ctx);
  }
};

/** Runs `work` on the configured event store alone (no secret key, read models or broker). */
export const withEventStore = async (options: Record<string, unknown>, work: (store: EventStore) => Promise<void>) => {
  const store = await openEventStore(configFrom(options));
  try {
    await work(store);
  } finally {
    await store.close();
  }
};
