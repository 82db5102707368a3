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

/**
 * Keep the timestamp a message (or part `part` of a split one) carries to its messenger, before it
 * is first handed over: every later hand-off of it carries the same (Session's clients drop a
 * second message of one sender and timestamp, so a retry or a takeover is never seen twice).
 */
export interface KeepTimestamp {
  type: 'KeepTimestamp';
  data: { message: OutboundRef; attempt: number; part: number; timestamp: number; now: Date };
}

export type DeliveryCommand = RecordAttempt | KeepTimestamp;
