import type { Message, TopicMessages } from 'kafkajs';

/**
 * How a publish of any size reaches Kafka without being refused.
 *
 * kafkajs turns one `sendBatch` into one Produce request per broker, holding one record batch per
 * partition with every message of the call for that partition; it never splits. The broker
 * refuses a record batch larger than the topic's `max.message.bytes` (the broker's
 * `message.max.bytes`, 1 MB, unless the topic says otherwise) and a request larger than
 * `socket.request.max.bytes` (100 MB). So a publish is cut, in order, into requests whose records
 * add up to at most `maxRequestBytes`; those are sent one after the other, so records stay in
 * order per topic (per partition). A record larger than that bound travels alone; the adapter
 * creates its topics with a `max.message.bytes` above both the bound and `maxRecordBytes`.
 */

/** Bytes of a record batch's header (magic v2) and slack for the request around the batches. */
export const BATCH_OVERHEAD_BYTES = 64 * 1024;

/**
 * An upper bound of a message's size in a v2 record batch: length, attributes, timestamp and
 * offset deltas, key and value lengths, header count (varints, at most 36 bytes), then per header
 * two length varints (at most 10 bytes) and the UTF-8 bytes of every string.
 */
export const encodedBytes = (message: Message): number => {
  let bytes = 36;
  if (typeof message.key === 'string') bytes += Buffer.byteLength(message.key, 'utf8');
  else if (message.key) bytes += message.key.length;
  if (typeof message.value === 'string') bytes += Buffer.byteLength(message.value, 'utf8');
  else if (message.value) bytes += message.value.length;
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    bytes += 10 + Buffer.byteLength(name, 'utf8');
    for (const item of Array.isArray(value) ? value : [value]) {
      if (typeof item === 'string') bytes += Buffer.byteLength(item, 'utf8');
      else if (item) bytes += item.length;
    }
  }
  return bytes;
};

export interface OutgoingMessage {
  readonly topic: string;
  readonly message: Message;
  /** `encodedBytes(message)`. */
  readonly bytes: number;
}

/**
 * Cuts messages (in publish order) into consecutive requests of at most `maxRequestBytes` of
 * records each (a larger message goes alone), each one's messages grouped by topic in order.
 */
export const produceRequests = (messages: readonly OutgoingMessage[], maxRequestBytes: number): TopicMessages[][] => {
  const requests: TopicMessages[][] = [];
  let current = new Map<string, Message[]>();
  let bytes = 0;
  const close = () => {
    if (current.size === 0) return;
    requests.push([...current].map(([topic, list]) => ({ topic, messages: list })));
    current = new Map();
    bytes = 0;
  };
  for (const { topic, message, bytes: size } of messages) {
    if (bytes > 0 && bytes + size > maxRequestBytes) close();
    const list = current.get(topic);
    if (list) list.push(message);
    else current.set(topic, [message]);
    bytes += size;
  }
  close();
  return requests;
};
