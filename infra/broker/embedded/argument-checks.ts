import type { Broker, OutgoingRecord } from '../port.ts';

/** What the embedded broker refuses before it touches the log: a caller's mistake, thrown at once (TypeError, RangeError). */
export const validTopic = (topic: unknown): void => {
  if (typeof topic !== 'string' || topic.length === 0) throw new TypeError(`A topic is a non-empty string, got ${String(topic)}`);
};

export const validRecord = (record: OutgoingRecord): void => {
  validTopic(record.topic);
  if (typeof record.value !== 'string') throw new TypeError(`A record's value is a string (topic ${record.topic})`);
  if (record.dueAt !== undefined && !Number.isFinite(record.dueAt)) throw new TypeError(`dueAt is epoch ms (topic ${record.topic})`);
};

export const validConsumeOptions = (options: Parameters<Broker['consume']>[0]): void => {
  if (typeof options.groupId !== 'string' || options.groupId.length === 0) throw new TypeError('groupId is a non-empty string');
  if (options.topics.length === 0) throw new TypeError('A consumer needs at least one topic');
  for (const topic of options.topics) validTopic(topic);
  const batchSize = options.batchSize ?? 100;
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new RangeError(`batchSize must be a positive integer, got ${batchSize}`);
};

export const positive = (value: number, name: string): number => {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
};
