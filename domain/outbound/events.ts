import type { OutboundMessage } from './message.ts';

/** On stream `sendbatch-<batchId>`: every message a send call accepted, durable together. */
export type SendBatchEvent = {
  type: 'MessagesAccepted';
  data: { batchId: string; credentialId: string; userId: string; messages: OutboundMessage[]; acceptedAt: string };
};

/**
 * On stream `outbound-<messageId>`: the outcome of each delivery attempt. Each names the message's
 * app and messenger, so that an app's history can be read without the send batch.
 */
export type DeliveryEvent =
  | { type: 'MessageDelivered'; data: { messageId: string; appId: string; messenger: string; attempt: number; deliveredAt: string } }
  | {
      type: 'DeliveryAttemptFailed';
      data: {
        messageId: string;
        appId: string;
        messenger: string;
        attempt: number;
        reason: string;
        permanent: boolean;
        failedAt: string;
        /** Present when another attempt follows: when, and what to deliver. */
        retry?: { attempt: number; dueAt: string; message: OutboundMessage };
      };
    }
  | {
      type: 'MessageAbandoned';
      data: { messageId: string; appId: string; messenger: string; attempts: number; reason: string; abandonedAt: string; message: OutboundMessage };
    };
