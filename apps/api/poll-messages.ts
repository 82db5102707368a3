import { inboundBinding, type InboundBody, type InboundMessage } from '../../domain/inbound/events.ts';
import type { ConsumedRecord } from '../../infra/broker/port.ts';
import { bodiesOfStrings } from '../../domain/shared/message-body.ts';
import { SealedPayloadError, type OpenedPayload } from '../../infra/crypto/message-sealer.ts';
import type { RelayContext } from '../boot/context.ts';
import { isLegacyInbound, type InboundRecord } from '../pipeline/queue-records.ts';
import { topics } from '../pipeline/topology.ts';
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
  const popped = new Map<string, Opened[]>(appIds.map((appId) => [appId, []]));
  // Start at a random queue so that a small limit over many apps starves none of them.
  const offset = appIds.length > 1 ? Math.floor(Math.random() * appIds.length) : 0;
  let open = [...appIds.slice(offset), ...appIds.slice(0, offset)];
  let remaining = limit;
  let failure: unknown;
  while (remaining > 0 && open.length > 0 && failure === undefined) {
    const asks = open
      .map((appId, i) => ({ appId, quota: Math.floor(remaining / open.length) + (i < remaining % open.length ? 1 : 0) }))
      .filter((ask) => ask.quota > 0);
    const results = await Promise.allSettled(
      asks.map(async (ask) => {
        let opened: Map<bigint, Opened | undefined> = new Map();
        const records = await ctx.broker.pop(topics.inbound(ask.appId), ask.quota, {
          accept: async (candidates) => {
            opened = await openRecords(ctx, candidates);
          },
        });
        return { records, opened };
      }),
    );
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

interface Opened {
  message: PolledMessage;
  keyId: string | undefined;
}

/** Opens records about to be popped; by offset, undefined for a record whose body is forgotten. Rejects when the keys cannot be read. */
const openRecords = async (ctx: RelayContext, records: readonly ConsumedRecord[]): Promise<Map<bigint, Opened | undefined>> => {
  const values = records.map((record) => JSON.parse(record.value) as InboundRecord);
  const keyIds = [...new Set(values.flatMap((value) => (isLegacyInbound(value) ? [] : [value.keyId])))];
  const wrapped = keyIds.length === 0 ? new Map<string, string>() : await ctx.store.keys.get(keyIds, new Date());
  const opened = new Map<bigint, Opened | undefined>();
  records.forEach((record, i) => {
    const value = values[i]!;
    if (isLegacyInbound(value)) {
      opened.set(record.offset, { message: polled(value, { c: value.contactId, t: value.content, ...(value.groupId !== undefined ? { g: value.groupId } : {}) }), keyId: undefined });
      return;
    }
    const key = wrapped.get(value.keyId);
    if (key === undefined) {
      opened.set(record.offset, undefined);
      return;
    }
    const body = inboundBodyOf(ctx.sealer.open(ctx.sealer.unwrap(key), inboundBinding(value.messageId), value.sealed));
    opened.set(record.offset, { message: polled(value, body), keyId: value.keyId });
  });
  return opened;
};

/** The body an inbound payload holds: its three strings (s2), or JSON (s1, Relay 0.1 before s2). */
const inboundBodyOf = (opened: OpenedPayload): InboundBody => {
  const body = opened.format === 'strings' ? bodiesOfStrings(opened.strings)?.[0] : (opened.value as InboundBody);
  if (body === undefined || typeof body.c !== 'string' || typeof body.t !== 'string') throw new SealedPayloadError('An inbound payload does not hold one body');
  return body;
};

const interleave = <T>(lists: readonly T[][]): T[] => {
  const out: T[] = [];
  const total = lists.reduce((n, l) => n + l.length, 0);
  for (let i = 0; out.length < total; i++) {
    for (const list of lists) if (i < list.length) out.push(list[i]!);
  }
  return out;
};

/** The interface's PolledMessage of a record and its opened body. */
const polled = (m: Pick<InboundMessage, 'appId' | 'messenger' | 'messageId' | 'timestamp' | 'isGroupMessage' | 'isCommand' | 'command'>, body: InboundBody): PolledMessage => ({
  appId: m.appId,
  messenger: m.messenger,
  contactId: body.c,
  messageId: m.messageId,
  content: body.t,
  timestamp: m.timestamp,
  ...(m.isGroupMessage && body.g !== undefined ? { groupId: body.g } : {}),
  isGroupMessage: m.isGroupMessage,
  isCommand: m.isCommand,
  ...(m.command !== undefined ? { command: m.command } : {}),
});
