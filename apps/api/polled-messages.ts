import { inboundBinding, type InboundBody, type InboundMessage } from '../../domain/inbound/events.ts';
import { bodiesOfStrings } from '../../domain/shared/message-body.ts';
import type { ConsumedRecord } from '../../infra/broker/port.ts';
import { SealedPayloadError, type OpenedPayload } from '../../infra/crypto/message-sealer.ts';
import type { RelayContext } from '../services/context.ts';
import { isLegacyInbound, type InboundRecord } from '../pipeline/queue-records.ts';
import type { PolledMessage } from './schemas.ts';

/**
 * Inbound queue records as the interface's PolledMessage: opened with their data keys, for a poll
 * and for a webhook delivery alike.
 */
export interface OpenedInbound {
  message: PolledMessage;
  keyId: string | undefined;
}

/** Opens records about to be popped; by offset, undefined for a record whose body is forgotten. Rejects when the keys cannot be read. */
export const openInboundRecords = async (ctx: Pick<RelayContext, 'store' | 'sealer'>, records: readonly ConsumedRecord[]): Promise<Map<bigint, OpenedInbound | undefined>> => {
  const values = records.map((record) => JSON.parse(record.value) as InboundRecord);
  const keyIds = [...new Set(values.flatMap((value) => (isLegacyInbound(value) ? [] : [value.keyId])))];
  const wrapped = keyIds.length === 0 ? new Map<string, string>() : await ctx.store.keys.get(keyIds, new Date());
  const opened = new Map<bigint, OpenedInbound | undefined>();
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
