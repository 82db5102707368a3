import type { Logger } from 'pino';
import type { AppEvent } from '../../domain/app/events.ts';
import type { InboundEvent } from '../../domain/inbound/events.ts';
import type { DeliveryEvent, SendBatchEvent } from '../../domain/outbound/events.ts';
import { topics, type Broker, type OutgoingRecord } from '../../infra/broker/port.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import { startCheckpointedSubscription, type CheckpointedSubscription } from '../shared/checkpointed-subscription.ts';
import type { OutboundRecord } from './outbound-record.ts';

export const PUBLISHER_CHECKPOINT = 'publisher';

/**
 * The only way messages reach the broker: a checkpointed subscription to the event store that
 * turns accepted, retried, abandoned and received messages into topic records. Each record
 * carries the message id (plus the attempt for retries) as its idempotency id.
 */
export const recordsFor = (event: RecordedEvent): OutgoingRecord[] => {
  const e = event as unknown as SendBatchEvent | DeliveryEvent | InboundEvent;
  switch (e.type) {
    case 'MessagesAccepted':
      return e.data.messages.map((message) => ({
        topic: topics.outbound(message.messenger),
        key: `${message.appId}:${message.contactId}`,
        value: JSON.stringify({ message, attempt: 1 } satisfies OutboundRecord),
        id: message.messageId,
      }));
    case 'DeliveryAttemptFailed': {
      const retry = e.data.retry;
      if (!retry) return [];
      return [
        {
          topic: topics.retry(e.data.attempt),
          key: `${retry.message.appId}:${retry.message.contactId}`,
          value: JSON.stringify({ message: retry.message, attempt: retry.attempt } satisfies OutboundRecord),
          id: `${e.data.messageId}:${retry.attempt}`,
          dueAt: Date.parse(retry.dueAt),
        },
      ];
    }
    case 'MessageAbandoned':
      return [
        {
          topic: topics.dead,
          key: `${e.data.message.appId}:${e.data.message.contactId}`,
          value: JSON.stringify({ message: e.data.message, attempts: e.data.attempts, reason: e.data.reason }),
          id: e.data.messageId,
        },
      ];
    case 'InboundMessageReceived': {
      const { receivedAt: _receivedAt, ...message } = e.data;
      return [{ topic: topics.inbound(message.appId), key: message.contactId, value: JSON.stringify(message), id: message.messageId }];
    }
    default:
      return [];
  }
};

/** Topics to create ahead of their first record: an app's inbound queue exists from its creation. */
export const topicsFor = (event: RecordedEvent): string[] => {
  const e = event as unknown as AppEvent;
  return e.type === 'AppCreated' ? [topics.inbound(e.data.appId)] : [];
};

/** The events the publisher reads (its checkpoint moves only over these). */
export const PUBLISHER_FILTER = { categories: ['sendbatch', 'outbound', 'inbound', 'app'] } as const;

export const startPublisher = (store: EventStore, broker: Broker, log: Logger): Promise<CheckpointedSubscription> =>
  startCheckpointedSubscription(store, {
    name: PUBLISHER_CHECKPOINT,
    filter: PUBLISHER_FILTER,
    // A send batch event carries up to 50 messages: small batches keep each publish short.
    batchSize: 20,
    log: log.child({ component: 'publisher' }),
    handler: async (events) => {
      const created = events.flatMap(topicsFor);
      if (created.length > 0) await broker.ensureTopics(created);
      const records = events.flatMap(recordsFor);
      if (records.length > 0) await broker.publish(records);
    },
  });
