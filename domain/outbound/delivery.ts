import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import type { DeliveryEvent } from './events.ts';
import type { OutboundMessage } from './message.ts';

export const deliveryStreamName = (messageId: string) => `outbound-${messageId}`;

export interface DeliveryPolicy {
  /** Total attempts, the first included (the interface: 3). */
  maxAttempts: number;
  /** Delay before attempt n+1 after attempt n failed: base × factor^(n-1) (1 s, 4 s by default). */
  baseDelayMs: number;
  factor: number;
}

export const defaultDeliveryPolicy: DeliveryPolicy = { maxAttempts: 3, baseDelayMs: 1000, factor: 4 };

export const retryDelayMs = (policy: DeliveryPolicy, failedAttempt: number) =>
  policy.baseDelayMs * policy.factor ** (failedAttempt - 1);

export type AttemptOutcome = { ok: true } | { ok: false; permanent: boolean; reason: string };

export interface RecordAttempt {
  type: 'RecordAttempt';
  data: { message: OutboundMessage; attempt: number; outcome: AttemptOutcome; policy: DeliveryPolicy; now: Date };
}

export interface DeliveryState {
  attemptsRecorded: number;
  finished: boolean;
}

export const decide = (command: RecordAttempt, state: DeliveryState): Decision<DeliveryEvent> => {
  const { message, attempt, outcome, policy, now } = command.data;
  // A re-delivered record whose outcome is already known changes nothing (at-least-once consumers).
  if (state.finished || attempt <= state.attemptsRecorded) return [];
  const at = now.toISOString();
  const { messageId, appId, messenger } = message;
  if (outcome.ok) return [{ type: 'MessageDelivered', data: { messageId, appId, messenger, attempt, deliveredAt: at } }];
  const last = outcome.permanent || attempt >= policy.maxAttempts;
  if (last) {
    return [
      { type: 'DeliveryAttemptFailed', data: { messageId, appId, messenger, attempt, reason: outcome.reason, permanent: outcome.permanent, failedAt: at } },
      {
        type: 'MessageAbandoned',
        data: {
          messageId,
          appId,
          messenger,
          attempts: attempt,
          reason: outcome.permanent ? outcome.reason : `Gave up after ${attempt} attempts: ${outcome.reason}`,
          abandonedAt: at,
          message,
        },
      },
    ];
  }
  const dueAt = new Date(now.getTime() + retryDelayMs(policy, attempt)).toISOString();
  return [
    {
      type: 'DeliveryAttemptFailed',
      data: { messageId, appId, messenger, attempt, reason: outcome.reason, permanent: false, failedAt: at, retry: { attempt: attempt + 1, dueAt, message } },
    },
  ];
};

export const evolve = (state: DeliveryState, event: DeliveryEvent): DeliveryState => {
  switch (event.type) {
    case 'MessageDelivered':
      return { attemptsRecorded: event.data.attempt, finished: true };
    case 'DeliveryAttemptFailed':
      return { ...state, attemptsRecorded: event.data.attempt };
    case 'MessageAbandoned':
      return { ...state, finished: true };
    default:
      return assertNever(event);
  }
};

export const initialState = (): DeliveryState => ({ attemptsRecorded: 0, finished: false });

export const deliveryDecider: Decider<DeliveryState, RecordAttempt, DeliveryEvent> = { decide, evolve, initialState };
