import type { KafkaMessage, Message } from 'kafkajs';
import type { ConsumedRecord, Headers, OutgoingRecord } from '../port.ts';

/** Kafka headers that carry the port's idempotency id and due time next to the caller's headers. */
export const ID_HEADER = 'relay-id';
export const DUE_AT_HEADER = 'relay-due-at';

/** An outgoing record as a kafkajs message (the topic travels beside it). */
export const toKafkaMessage = (record: OutgoingRecord): Message => {
  const headers: Record<string, string> = { ...record.headers };
  if (record.id !== undefined) headers[ID_HEADER] = record.id;
  if (record.dueAt !== undefined) headers[DUE_AT_HEADER] = String(record.dueAt);
  return { key: record.key ?? null, value: record.value, headers };
};

/** A fetched kafkajs message as the port's record. */
export const fromKafkaMessage = (topic: string, partition: number, message: KafkaMessage): ConsumedRecord => {
  const headers: Record<string, string> = {};
  let id: string | undefined;
  let dueAt: number | undefined;
  for (const [name, raw] of Object.entries(message.headers ?? {})) {
    const value = Array.isArray(raw) ? raw[0] : raw;
    if (value === undefined) continue;
    const text = value.toString();
    if (name === ID_HEADER) id = text;
    else if (name === DUE_AT_HEADER) dueAt = Number(text);
    else headers[name] = text;
  }
  return {
    topic,
    partition,
    offset: BigInt(message.offset),
    key: message.key === null ? undefined : message.key.toString(),
    value: message.value === null ? '' : message.value.toString(),
    headers: headers as Headers,
    id,
    dueAt,
    timestamp: Number(message.timestamp),
  };
};
