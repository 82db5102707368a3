import { RecordTooLargeError, type OutgoingRecord, type TopicPolicy } from './port.ts';

/** `maxRecordBytes` when an adapter is given none: 1 MiB. */
export const DEFAULT_MAX_RECORD_BYTES = 1024 * 1024;

/**
 * A record's size as the port counts it: UTF-8 bytes of its value, key, header names and values,
 * and id (the adapters store the id beside the record, Kafka as a header).
 */
export const recordBytes = (record: OutgoingRecord): number => {
  let bytes = Buffer.byteLength(record.value, 'utf8');
  if (record.key !== undefined) bytes += Buffer.byteLength(record.key, 'utf8');
  if (record.id !== undefined) bytes += Buffer.byteLength(record.id, 'utf8');
  if (record.headers !== undefined)
    for (const [name, value] of Object.entries(record.headers)) bytes += Buffer.byteLength(name, 'utf8') + Buffer.byteLength(value, 'utf8');
  return bytes;
};

/** Throws RecordTooLargeError for the first record over `maxBytes`, before anything is written. */
export const checkRecordSizes = (records: readonly OutgoingRecord[], maxBytes: number): void => {
  for (const record of records) {
    // A string of n UTF-16 units holds at most 3n UTF-8 bytes: most records need no count.
    if (3 * utf16Units(record) <= maxBytes) continue;
    const bytes = recordBytes(record);
    if (bytes > maxBytes) throw new RecordTooLargeError(record.topic, bytes, maxBytes);
  }
};

const utf16Units = (record: OutgoingRecord): number => {
  let units = record.value.length + (record.key?.length ?? 0) + (record.id?.length ?? 0);
  if (record.headers !== undefined) for (const [name, value] of Object.entries(record.headers)) units += name.length + value.length;
  return units;
};

export type TopicPolicyOf = (topic: string) => TopicPolicy;

/** Checks what an application's policy says of a topic, so that a bad policy fails where it is used. */
export const policyOf = (topicPolicy: TopicPolicyOf, topic: string): TopicPolicy => {
  const policy = topicPolicy(topic);
  if (!Number.isSafeInteger(policy.partitions) || policy.partitions < 1)
    throw new RangeError(`The topic policy of ${topic} has ${policy.partitions} partitions; a topic has at least 1`);
  if (policy.retentionMs !== undefined && (!Number.isSafeInteger(policy.retentionMs) || policy.retentionMs < 1))
    throw new RangeError(`The topic policy of ${topic} has a retention of ${policy.retentionMs} ms; it must be a positive integer`);
  return policy;
};

/** Validates an adapter's `maxRecordBytes` option. */
export const maxRecordBytesOption = (value: number | undefined): number => {
  const bytes = value ?? DEFAULT_MAX_RECORD_BYTES;
  if (!Number.isSafeInteger(bytes) || bytes < 1) throw new RangeError(`maxRecordBytes must be a positive integer, got ${bytes}`);
  return bytes;
};
