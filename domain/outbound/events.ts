import type { OutboundMessage } from './message.ts';

/** On stream `sendbatch-<batchId>`: every message a send call accepted, durable together. */
export type SendBatchEvent = {
  type: 'MessagesAccepted';
  data: { batchId: string; credentialId: string; userId: string; messages: OutboundMessage[]; acceptedAt: string };
};

/** On stream `outbound-<messageId>`: the outcome of each delivery attempt. */
export type DeliveryEvent =
  | { type: 'MessageDelivered'; data: { messageId: string; attempt: number; deliveredAt: string } }
  | {
      type: 'DeliveryAttemptFailed';
      data: {
        messageId: string;
        attempt: number;
        reason: string;
        permanent: boolean;
        failedAt: string;
        /** Present when another attempt follows: when, and what to deliver. */
        retry?: { attempt: number; dueAt: string; message: OutboundMessage };
      };
    }
  | { type: 'MessageAbandoned'; data: { messageId: string; attempts: number; reason: string; abandonedAt: string; message: OutboundMessage } };
