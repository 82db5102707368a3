import { logLevel, type LogEntry } from 'kafkajs';
import type { Logger } from 'pino';

/** kafkajs logs through pino: errors as warnings (kafkajs retries them), the rest at debug. */
export const kafkaLogCreator = (log: Logger) => () => (entry: LogEntry) => {
  const { message, ...extra } = entry.log;
  if (entry.level <= logLevel.ERROR) log.warn({ kafka: entry.namespace, ...extra }, message);
  else log.debug({ kafka: entry.namespace, ...extra }, message);
};

/** A kafkajs client connected on first use; a failed connect is tried again on the next use. */
export interface LazyClient<T> {
  get(): Promise<T>;
  /**
   * Drops the client (disconnecting it in the background): the next `get` connects a new one.
   * For a client whose metadata names a topic deleted since: kafkajs asks for the metadata of
   * every topic it used and fails every request once one of them is gone.
   */
  reset(): void;
  close(): Promise<void>;
}

export const lazyClient = <T extends { connect(): Promise<void>; disconnect(): Promise<void> }>(create: () => T): LazyClient<T> => {
  let connecting: Promise<T> | undefined;
  const disconnect = (client: Promise<T> | undefined) =>
    client
      ?.then((c) => c.disconnect())
      .catch(() => undefined)
      .then(() => undefined) ?? Promise.resolve();
  return {
    get: (): Promise<T> =>
      (connecting ??= (async () => {
        const client = create();
        await client.connect();
        return client;
      })().catch((error: unknown) => {
        connecting = undefined;
        throw error;
      })),
    reset: () => {
      const dropped = connecting;
      connecting = undefined;
      void disconnect(dropped);
    },
    close: async () => {
      const dropped = connecting;
      connecting = undefined;
      await disconnect(dropped);
    },
  };
};

/** The kafkajs error type of an error or of any error it wraps. */
const kafkaTypes = (error: unknown, depth = 0): string[] => {
  if (typeof error !== 'object' || error === null || depth > 5) return [];
  const { type, cause, errors } = error as { type?: unknown; cause?: unknown; errors?: unknown };
  return [
    ...(typeof type === 'string' ? [type] : []),
    ...kafkaTypes(cause, depth + 1),
    ...(Array.isArray(errors) ? errors.flatMap((inner) => kafkaTypes(inner, depth + 1)) : []),
  ];
};

/** Kafka said a topic (or a partition of it) does not exist. */
export const isUnknownTopic = (error: unknown): boolean => kafkaTypes(error).includes('UNKNOWN_TOPIC_OR_PARTITION');

/** Kafka refused a record batch or request as too large. */
export const isTooLarge = (error: unknown): boolean =>
  kafkaTypes(error).some((type) => type === 'MESSAGE_TOO_LARGE' || type === 'RECORD_LIST_TOO_LARGE');

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Tries of an operation the broker refuses as retriable (a topic it does not list yet): about 15 s in all. */
const RETRIABLE_ATTEMPTS = 10;

/**
 * Runs `operation` again while the broker says its refusal is retriable: right after a topic was
 * made, a broker may not list it yet ("This server does not host this topic-partition"), and
 * kafkajs marks that retriable. Pauses of 200 ms doubling to 2 s.
 */
export const whileRetriable = async <T>(operation: () => Promise<T>): Promise<T> => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if ((error as { retriable?: unknown }).retriable !== true || attempt >= RETRIABLE_ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** attempt, 2_000)));
    }
  }
};
