import type { ConsumedRecord } from '../../infra/broker/port.ts';
import type { RelayContext } from '../services/context.ts';
import { topics } from '../services/topology.ts';
import { openInboundRecords, type OpenedInbound } from './polled-messages.ts';
import type { PolledMessage } from './schemas.ts';

export interface PollResult {
  readonly messages: PolledMessage[];
  /** The data keys of the messages returned: released once the answer is on its way. */
  readonly keyIds: string[];
  /** Why a round could not pop (the store or broker failed): what earlier rounds popped is still returned. */
  readonly failure?: unknown;
}

/**
 * Pops up to `limit` inbound messages across the key's apps, interleaved round-robin. Nothing is
 * lost on the way:
 * - each round asks every queue that may still hold messages for its share of what is left, so
 *   it never pops more than it returns;
 * - a pop takes effect only once its records were opened (keys read, bodies decrypted): if that
 *   fails, the records stay queued;
 * - a round that fails after earlier rounds popped returns what they popped (200), and only a poll
 *   that popped nothing reports the failure (503).
 * A record whose body was forgotten (its retention passed before anyone polled it) is popped and
 * not returned: there is nothing left to return.
 */
export const popRoundRobin = async (ctx: RelayContext, appIds: readonly string[], limit: number): Promise<PollResult> => {
  const popped = new Map<string, OpenedInbound[]>(appIds.map((appId) => [appId, []]));
  // Start at a random queue so that a small limit over many apps starves none of them.
  const offset = appIds.length > 1 ? Math.floor(Math.random() * appIds.length) : 0;
  let open = [...appIds.slice(offset), ...appIds.slice(0, offset)];
  let remaining = limit;
  let failure: unknown;
  while (remaining > 0 && open.length > 0 && failure === undefined) {
    const asks = open
      .map((appId, i) => ({ appId, quota: Math.floor(remaining / open.length) + (i < remaining % open.length ? 1 : 0) }))
      .filter((ask) => ask.quota > 0);
    const results = await settleAll(ctx, asks);
    const exhausted = new Set<string>();
    asks.forEach((ask, i) => {
      const result = results[i]!;
      if (result.status === 'rejected') {
        failure ??= result.reason;
        return;
      }
      const { records, opened } = result.value;
      for (const record of records) {
        const message = opened.get(record.offset);
        if (message) {
          popped.get(ask.appId)!.push(message);
          remaining--;
        } else ctx.metrics.pollForgotten.inc();
      }
      if (records.length < ask.quota) exhausted.add(ask.appId);
    });
    open = open.filter((appId) => !exhausted.has(appId));
  }
  const ordered = interleave(appIds.map((appId) => popped.get(appId)!));
  return {
    messages: ordered.map((o) => o.message),
    keyIds: ordered.flatMap((o) => (o.keyId === undefined ? [] : [o.keyId])),
    ...(failure !== undefined ? { failure } : {}),
  };
};

interface Ask {
  readonly appId: string;
  readonly quota: number;
}

interface Popped {
  readonly records: ConsumedRecord[];
  /** The records popped, opened (by offset; undefined for a body forgotten). */
  readonly opened: ReadonlyMap<bigint, OpenedInbound | undefined>;
}

const NOTHING_OPENED: ReadonlyMap<bigint, OpenedInbound | undefined> = new Map();

/** Pops one queue's share; the records are opened before the pop takes effect. */
const popAsk = async (ctx: RelayContext, ask: Ask): Promise<Popped> => {
  let opened = NOTHING_OPENED;
  const records = await ctx.broker.pop(topics.inbound(ask.appId), ask.quota, {
    accept: async (candidates) => {
      opened = await openInboundRecords(ctx, candidates);
    },
  });
  return { records, opened };
};

/**
 * Each ask's outcome, as Promise.allSettled gives them. A key of one app (most polls) makes one
 * ask, awaited directly: allSettled's promises cost a few µs of an empty poll's ~40.
 */
const settleAll = async (ctx: RelayContext, asks: readonly Ask[]): Promise<PromiseSettledResult<Popped>[]> => {
  if (asks.length !== 1) return Promise.allSettled(asks.map((ask) => popAsk(ctx, ask)));
  try {
    return [{ status: 'fulfilled', value: await popAsk(ctx, asks[0]!) }];
  } catch (reason) {
    return [{ status: 'rejected', reason }];
  }
};

const interleave = <T>(lists: readonly T[][]): T[] => {
  const out: T[] = [];
  const total = lists.reduce((n, l) => n + l.length, 0);
  for (let i = 0; out.length < total; i++) {
    for (const list of lists) if (i < list.length) out.push(list[i]!);
  }
  return out;
};
