import type { OutboundRef } from '../send-batch/message.ts';
import type { DeliveryPolicy } from './policy.ts';

/** What the messenger's connector answered to one attempt. */
export type AttemptOutcome =
  | { ok: true; parts?: number }
  | { ok: false; permanent: boolean; reason: string; partsDelivered?: number }
  /** No attempt could be made: the bot's identity is not on its daemon (see DeliveryDeferred). */
  | { ok: false; deferred: true; reason: string };

/** Record the outcome of attempt `attempt` to deliver a message. */
export interface RecordAttempt {
  type: 'RecordAttempt';
  data: { message: OutboundRef; attempt: number; outcome: AttemptOutcome; policy: DeliveryPolicy; now: Date };
}

export type DeliveryCommand = RecordAttempt;
