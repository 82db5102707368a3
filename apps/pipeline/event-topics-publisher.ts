import type { Logger } from 'pino';
import type { Broker, OutgoingRecord } from '../../infra/broker/port.ts';
import { categoryOf, type EventStore, type RecordedEvent } from '../../infra/event-store/port.ts';
import { checkpoints, topics } from '../services/topology.ts';
import { toPublicEvent } from '../history/public-event.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';


/**
 * The record of an event on `events.<category>`: keyed by stream (a stream's events stay in order),
 * the event's id as idempotency id, the event as `toPublicEvent` shows it (no secrets).
 */
export const eventRecord = (event: RecordedEvent): OutgoingRecord => ({
  topic: topics.events(categoryOf(event.streamName)),
  key: event.streamName,
  id: event.id,
  value: JSON.stringify(toPublicEvent(event)),
});

/** Every event of the store, in order, onto `events.<category>` for analytics consumers. */
export const startEventTopicsPublisher = (store: EventStore, broker: Broker, log: Logger): Promise<CheckpointedSubscription> =>
  startCheckpointedSubscription(store, {
    name: checkpoints.eventTopics,
    filter: {},
    batchSize: 200,
    log: log.child({ component: 'event-topics' }),
    handler: async (events) => {
      await broker.publish(events.map(eventRecord));
    },
  });
