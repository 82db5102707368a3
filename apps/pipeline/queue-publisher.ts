import type { Logger } from 'pino';
import type { AppEvent } from '../../domain/app/events.ts';
import type { DeliveryEvent } from '../../domain/delivery/events.ts';
import type { InboundEvent } from '../../domain/inbound/events.ts';
import type { SendBatchEvent } from '../../domain/send-batch/events.ts';
import type { Broker, OutgoingRecord } from '../../infra/broker/port.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../../infra/event-store/checkpointed-subscription.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import type { OutboundRef } from '../../domain/send-batch/message.ts';
import type { DeadNotice, InboundRecord, LegacyOutboundMessage, OutboundRecord } from './queue-records.ts';
import { checkpoints, QUEUE_PUBLISHER_FILTER, topics } from '../services/topology.ts';

/**
 * The events the publisher is given: those of its filter's types only. A case for another type
 * below does not compile: it would never be read (add the type to QUEUE_PUBLISHER_FILTER).
 */
type PublishedEvent = Extract<SendBatchEvent | DeliveryEvent | InboundEvent | AppEvent, { type: (typeof QUEUE_PUBLISHER_FILTER.types)[number] }>;

/**
 * The only way messages reach the broker: a checkpointed subscription to the event store that
 * turns accepted, retried and received messages into queue records, abandoned ones into dead
 * notices, and keeps each app's inbound queue from its creation to its deletion. Each record
 * carries the message id (plus the attempt for retries) as its idempotency id, and is keyed by
 * app (never by contact: a record key is stored in clear).
 */
export const recordsFor = (event: RecordedEvent): OutgoingRecord[] => {
  const e = event as unknown as PublishedEvent;
  switch (e.type) {
    case 'MessagesAccepted': {
      const { batchId } = e.data;
      return e.data.messages.map((message) => ({
        topic: topics.outbound(message.messenger),
        key: message.appId,
        value: JSON.stringify({ message: { ...message, batchId }, attempt: 1 } satisfies OutboundRecord),
        id: message.messageId,
      }));
    }
    case 'DeliveryAttemptFailed': {
      const { retry, messageId, appId, messenger, batchId, keyId, split } = e.data;
      if (!retry) return [];
      // An event of a Relay older than privacy at rest carries the message itself.
      const legacy = (retry as { message?: LegacyOutboundMessage }).message;
      const message = legacy ?? ({ messageId, appId, messenger: messenger as OutboundRef['messenger'], batchId, keyId, ...(split ? { split } : {}) } satisfies OutboundRef);
      return [
        {
          topic: topics.retry(e.data.attempt),
          key: appId,
          value: JSON.stringify({ message, attempt: retry.attempt } satisfies OutboundRecord),
          id: `${messageId}:${retry.attempt}`,
          dueAt: Date.parse(retry.dueAt),
        },
      ];
    }
    case 'DeliveryDeferred': {
      const { messageId, appId, messenger, batchId, keyId, split, retry, deferredAt } = e.data;
      const message = { messageId, appId, messenger: messenger as OutboundRef['messenger'], batchId, keyId, ...(split ? { split } : {}) } satisfies OutboundRef;
      return [
        {
          topic: topics.deferred,
          key: appId,
          value: JSON.stringify({ message, attempt: retry.attempt } satisfies OutboundRecord),
          // Each deferral is a record of its own (the embedded log drops a second record of an id).
          id: `${messageId}:${retry.attempt}:deferred:${deferredAt}`,
          dueAt: Date.parse(retry.dueAt),
        },
      ];
    }
    case 'MessageAbandoned': {
      const { messageId, appId, messenger, attempts, reason, abandonedAt } = e.data;
      return [{ topic: topics.dead, key: appId, value: JSON.stringify({ messageId, appId, messenger, attempts, reason, abandonedAt } satisfies DeadNotice), id: messageId }];
    }
    case 'InboundMessageReceived': {
      const { receivedAt: _receivedAt, ...message } = e.data;
      return [{ topic: topics.inbound(message.appId), key: message.appId, value: JSON.stringify(message satisfies InboundRecord), id: message.messageId }];
    }
    default:
      return [];
  }
};

/** Topics to create ahead of their first record, and to delete with what they hold: an app's inbound queue lives as long as the app. */
export const topicChangesFor = (event: RecordedEvent): { create: string[]; delete: string[] } => {
  const e = event as unknown as PublishedEvent;
  if (e.type === 'AppCreated') return { create: [topics.inbound(e.data.appId)], delete: [] };
  if (e.type === 'AppDeleted') return { create: [], delete: [topics.inbound(e.data.appId)] };
  return { create: [], delete: [] };
};

/**
 * Starts the publisher. `seen` is told every event it publishes from, before the records are
 * published (the delivery worker of this thread keeps the send batches' sealed bodies from it);
 * `published`, the records once published.
 */
export const startQueuePublisher = (
  store: EventStore,
  broker: Broker,
  log: Logger,
  seen?: (event: RecordedEvent) => void,
  /** Told the records it published, once they are in the broker (the webhook dispatcher wakes on them). */
  published?: (records: readonly OutgoingRecord[]) => void,
): Promise<CheckpointedSubscription> =>
  startCheckpointedSubscription(store, {
    name: checkpoints.queuePublisher,
    filter: QUEUE_PUBLISHER_FILTER,
    // Up to 200 events or 64 KiB (a send batch of 50 messages is ~15 KiB: a page of ~4 of them is
    // 200 records): a publisher behind a backlog makes few synced commits per event, each short.
    batchSize: 200,
    maxBatchBytes: 64 * 1024,
    // Its lag (relay_publisher_checkpoint_lag) counts what is after its checkpoint: quiet for 10 s, it moves it past the events it skips.
    advanceWhenQuietMs: 10_000,
    log: log.child({ component: 'queue-publisher' }),
    handler: async (events) => {
      // In order: records of an app published before its deletion, then the queue deleted with them.
      let records: OutgoingRecord[] = [];
      const flush = async () => {
        if (records.length > 0) {
          await broker.publish(records);
          published?.(records);
        }
        records = [];
      };
      for (const event of events) {
        const topicChanges = topicChangesFor(event);
        if (topicChanges.create.length > 0) await broker.ensureTopics(topicChanges.create);
        if (topicChanges.delete.length > 0) {
          await flush();
          await broker.deleteTopics(topicChanges.delete);
        }
        seen?.(event);
        records.push(...recordsFor(event));
      }
      await flush();
    },
  });
