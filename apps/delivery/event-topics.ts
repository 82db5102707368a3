import type { Logger } from 'pino';
import { topics, type Broker, type OutgoingRecord } from '../../infra/broker/port.ts';
import { categoryOf, type EventStore, type RecordedEvent } from '../../infra/event-store/port.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../shared/checkpointed-subscription.ts';

export const EVENT_TOPICS_CHECKPOINT = 'event-topics';

/**
 * Fields analytics consumers never get: secrets (even encrypted) and the hashes that find a key or
 * a session. Auditors who need them read the event store itself (`relay events`).
 */
const WITHHELD = new Set(['secretEncrypted', 'webhookAuthSecretEncrypted', 'keyHash', 'tokenHash']);

const withheld = (data: unknown): unknown => {
  if (Array.isArray(data)) return data.map(withheld);
  if (data === null || typeof data !== 'object') return data;
  return Object.fromEntries(Object.entries(data).filter(([key]) => !WITHHELD.has(key)).map(([key, value]) => [key, withheld(value)]));
};

/**
 * The record of an event on `events.<category>`: keyed by stream (a stream's events stay in order),
 * the event's id as idempotency id, positions as strings (JSON has no bigint).
 */
export const eventRecord = (event: RecordedEvent): OutgoingRecord => ({
  topic: topics.events(categoryOf(event.streamName)),
  key: event.streamName,
  id: event.id,
  value: JSON.stringify({
    id: event.id,
    type: event.type,
    streamName: event.streamName,
    streamVersion: String(event.streamVersion),
    globalPosition: String(event.globalPosition),
    recordedAt: event.recordedAt.toISOString(),
    data: withheld(event.data),
    metadata: event.metadata,
  }),
});

/** Every event of the store, in order, onto `events.<category>` for analytics consumers. */
export const startEventTopicsPublisher = (store: EventStore, broker: Broker, log: Logger): Promise<CheckpointedSubscription> =>
  startCheckpointedSubscription(store, {
    name: EVENT_TOPICS_CHECKPOINT,
    filter: {},
    batchSize: 200,
    log: log.child({ component: 'event-topics' }),
    handler: async (events) => {
      await broker.publish(events.map(eventRecord));
    },
  });
