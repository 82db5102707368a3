/**
 * On stream `outbound-<messageId>`: the outcome of each delivery attempt. Each names the message's
 * app and messenger, so that an app's history can be read without the send batch; none carries
 * the body or the contact (they are sealed in the batch: `batchId`, `keyId`). A final outcome
 * (delivered, abandoned) releases the message's use of its data key in the same transaction.
 */
/** What an attempt's event says of its message (never the body or the contact: they are sealed in the batch). */
interface AttemptOf {
  messageId: string;
  appId: string;
  messenger: string;
  batchId: string;
  keyId: string;
  attempt: number;
}

export type DeliveryEvent =
  | {
      type: 'MessageDelivered';
      /** `parts`: how many numbered parts it went out as, when it was split. */
      data: { messageId: string; appId: string; messenger: string; attempt: number; deliveredAt: string; parts?: number };
    }
  | {
      type: 'DeliveryAttemptFailed';
      data: AttemptOf & {
        reason: string;
        permanent: boolean;
        failedAt: string;
        /** Present when another attempt follows: which, and when. */
        retry?: { attempt: number; dueAt: string };
        /** A message to be split: its retries split it too. */
        split?: true;
        /** Of a split message, the parts the messenger has (the next attempt goes on from there). */
        partsDelivered?: number;
      };
    }
  | {
      /**
       * The attempt could not be made: the bot's identity is not on its daemon (unlinked, removed,
       * not bound yet). No attempt is spent; the same attempt is made again at `retry.dueAt`, until
       * the identity has been missing for the policy's `identityWaitMs` (then MessageAbandoned).
       */
      type: 'DeliveryDeferred';
      data: AttemptOf & {
        reason: string;
        deferredAt: string;
        retry: { attempt: number; dueAt: string };
        split?: true;
      };
    }
  | {
      /**
       * The timestamp (ms since the epoch) the message, or part `part` of a split one, carries to
       * its messenger, kept before its first hand-off: every hand-off of it carries this one, a
       * retry's and another instance's too. Only for messengers whose clients drop a repeat of a
       * sender and timestamp (Session): there a message handed twice is seen once.
       */
      type: 'DeliveryTimestamped';
      data: { messageId: string; appId: string; messenger: string; attempt: number; part: number; timestamp: number; timestampedAt: string };
    }
  | {
      type: 'MessageAbandoned';
      data: { messageId: string; appId: string; messenger: string; attempts: number; reason: string; abandonedAt: string };
    };

/** Whether an event ends the delivery of its message. */
export const isFinalOutcome = (event: DeliveryEvent): boolean => event.type === 'MessageDelivered' || event.type === 'MessageAbandoned';
