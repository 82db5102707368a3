import type { Logger } from 'pino';
import { shredDecider, shredStreamName } from '../../domain/shred/decider.ts';
import type { ForgetReason, ForgottenKey } from '../../domain/shred/events.ts';
import { DataKeyGoneError, type EventStore, type RetiredBecause } from '../../infra/event-store/port.ts';
import { uuidV7 } from '../../infra/ids/uuid-v7.ts';
import type { RelayMetrics } from '../services/metrics.ts';
import { handleCommand } from '../commands/handle-command.ts';

export interface BodyShredderDeps {
  readonly store: EventStore;
  readonly metrics: RelayMetrics;
  readonly log: Logger;
  /** How often it looks for retired keys (BODY_SHRED_INTERVAL_MS). */
  readonly intervalMs: number;
}

export interface BodyShredder {
  /** Destroys every key retired now; resolves with how many it destroyed. */
  sweep(): Promise<number>;
  stop(): Promise<void>;
}

const REASONS: Record<RetiredBecause, ForgetReason> = { used: 'finished', expired: 'retention', scope: 'app deleted' };
/** Keys destroyed in one append (the event lists them all: about 150 bytes each). */
const PAGE = 500;
/** Tries of a page whose keys another shredder destroyed meanwhile. */
const TRIES = 5;

/**
 * Destroys the data keys that are retired: every message they seal is done (delivered, abandoned,
 * polled), their retention passed, or their app was deleted. Each sweep is one append of
 * `BodiesForgotten` on `shred-<id>`, listing the keys, with the keys destroyed in the same
 * transaction: so an auditor sees when each body was forgotten, and the write costs one commit per
 * sweep, not one per message. Several shredders (one per delivery process) may run: when another
 * one destroyed some of a page's keys first, the append writes nothing and the page is read again.
 */
export const startBodyShredder = (deps: BodyShredderDeps): BodyShredder => {
  let stopped = false;
  let running: Promise<number> | undefined;

  /** Destroys one page of due keys; resolves with how many, and whether more may be due. */
  const shredPage = async (): Promise<{ destroyed: number; more: boolean }> => {
    for (let attempt = 1; ; attempt++) {
      const due = await deps.store.keys.due(new Date(), PAGE);
      if (due.length === 0) return { destroyed: 0, more: false };
      const keys: ForgottenKey[] = due.map((key) => ({ keyId: key.id, appId: key.scope, subject: key.subject, reason: REASONS[key.because] }));
      const shredId = uuidV7();
      try {
        const result = await handleCommand(
          deps.store,
          shredStreamName(shredId),
          shredDecider,
          { type: 'ForgetBodies', data: { shredId, keys, now: new Date() } },
          { actor: 'system:shredder', correlationId: shredId },
          { newStream: true, keys: (events) => (events.length > 0 ? { destroy: keys.map((key) => key.keyId) } : undefined) },
        );
        if (!result.ok) throw new Error(result.error.message);
        for (const key of keys) deps.metrics.bodiesForgotten.inc({ reason: key.reason });
        return { destroyed: keys.length, more: due.length === PAGE };
      } catch (error) {
        // Another shredder destroyed some of these keys first: read what is due again.
        if (!(error instanceof DataKeyGoneError) || attempt >= TRIES) throw error;
      }
    }
  };

  const sweepOnce = async (): Promise<number> => {
    let destroyed = 0;
    while (!stopped) {
      const page = await shredPage();
      destroyed += page.destroyed;
      if (!page.more) break;
    }
    return destroyed;
  };

  const sweep = (): Promise<number> => {
    running ??= sweepOnce().finally(() => (running = undefined));
    return running;
  };

  const timer = setInterval(() => {
    if (running) return;
    sweep().catch((error: unknown) => deps.log.error({ err: error }, 'body shredder: sweep failed; it runs again at the next interval'));
  }, deps.intervalMs);
  timer.unref();

  return {
    sweep,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await running?.catch(() => undefined);
    },
  };
};
