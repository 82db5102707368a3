import type { Messenger } from '../shared/messengers.ts';
import type { WebhookAttemptData } from './events.ts';

/**
 * Record what a contact wrote to an app's bot identity. The plaintext (`content`, `groupId`)
 * decides the flags; only its sealed form (`sealed`, under data key `keyId`) is recorded.
 */
export interface ReceiveMessage {
  type: 'ReceiveMessage';
  data: {
    messageId: string;
    appId: string;
    appMessengerId: string;
    messenger: Messenger;
    content: string;
    groupId?: string;
    keyId: string;
    sealed: string;
    timestamp?: number;
    now: Date;
  };
}

/** Record that the app's webhook did not take the message after every attempt. */
export interface AbandonWebhookDelivery {
  type: 'AbandonWebhookDelivery';
  data: { messageId: string; appId: string; attempts: number; lastStatus: number | null; reason: string; now: Date };
}

/** Record one webhook attempt of the message (an attempt for a message not received, or already abandoned, records nothing). */
export interface RecordWebhookAttempt {
  type: 'RecordWebhookAttempt';
  data: WebhookAttemptData & { now: Date };
}

export type InboundCommand = ReceiveMessage | AbandonWebhookDelivery | RecordWebhookAttempt;
