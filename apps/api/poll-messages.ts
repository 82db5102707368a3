import type { InboundMessage } from '../../domain/inbound/events.ts';
import { topics, type Broker, type ConsumedRecord } from '../../infra/broker/port.ts';
import type { PolledMessage } from './schemas.ts';

/**
 * Pops up to `limit` inbound messages across the key's apps, interleaved round-robin. It never
 * pops more than it returns: each round asks every queue that may still hold messages for its
 * share of what is left, so nothing popped is dropped on the floor.
 */
export const popRoundRobin = async (broker: Broker, appIds: readonly string[], limit: number): Promise<PolledMessage[]> => {
  const popped = new Map<string, ConsumedRecord[]>(appIds.map((appId) => [appId, []]));
  // Start at a random queue so that a small limit over many apps starves none of them.
  const offset = appIds.length > 1 ? Math.floor(Math.random() * appIds.length) : 0;
  let open = [...appIds.slice(offset), ...appIds.slice(0, offset)];
  let remaining = limit;
  while (remaining > 0 && open.length > 0) {
    const asks = open
      .map((appId, i) => ({ appId, quota: Math.floor(remaining / open.length) + (i < remaining % open.length ? 1 : 0) }))
      .filter((ask) => ask.quota > 0);
    const results = await Promise.all(asks.map((ask) => broker.pop(topics.inbound(ask.appId), ask.quota)));
    const exhausted = new Set<string>();
    asks.forEach((ask, i) => {
      const records = results[i]!;
      popped.get(ask.appId)!.push(...records);
      remaining -= records.length;
      if (records.length < ask.quota) exhausted.add(ask.appId);
    });
    open = open.filter((appId) => !exhausted.has(appId));
  }
  return interleave(appIds.map((appId) => popped.get(appId)!)).map(toPolledMessage);
};

const interleave = <T>(lists: readonly T[][]): T[] => {
  const out: T[] = [];
  for (let i = 0; out.length < lists.reduce((n, l) => n + l.length, 0); i++) {
    for (const list of lists) if (i < list.length) out.push(list[i]!);
  }
  return out;
};

export const toPolledMessage = (record: ConsumedRecord): PolledMessage => {
  const m = JSON.parse(record.value) as InboundMessage;
  return {
    appId: m.appId,
    messenger: m.messenger,
    contactId: m.contactId,
    messageId: m.messageId,
    content: m.content,
    timestamp: m.timestamp,
    ...(m.groupId !== undefined ? { groupId: m.groupId } : {}),
    isGroupMessage: m.isGroupMessage,
    isCommand: m.isCommand,
    ...(m.command !== undefined ? { command: m.command } : {}),
  };
};
