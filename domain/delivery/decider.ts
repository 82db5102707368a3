import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import type { DeliveryCommand, KeepTimestamp } from './commands.ts';
import type { DeliveryEvent } from './events.ts';
import { deferDelayMs, retryDelayMs } from './policy.ts';

export const deliveryStreamName = (messageId: string) => `outbound-${messageId}`;

export interface DeliveryState {
  attemptsRecorded: number;
  finished: boolean;
  /** Of a split message, the parts already delivered by earlier attempts. */
  partsDelivered: number;
  /** While the bot's identity is missing: since when, how many times, and until when the next look waits. */
  deferredSince: string | null;
  deferrals: number;
  deferredUntil: string | null;
  /** The timestamps kept for the message (index 0) or its parts (DeliveryTimestamped): never changed once kept. */
  timestamps: Readonly<Record<number, number>>;
}

const keepTimestamp = (command: KeepTimestamp, state: DeliveryState): Decision<DeliveryEvent> => {
  const { message, attempt, part, timestamp, now } = command.data;
  // The first timestamp kept stays; a finished message is handed no more.
  if (state.finished || state.timestamps[part] !== undefined) return [];
  const { messageId, appId, messenger } = message;
  return [{ type: 'DeliveryTimestamped', data: { messageId, appId, messenger, attempt, part, timestamp, timestampedAt: now.toISOString() } }];
};

export const decide = (command: DeliveryCommand, state: DeliveryState): Decision<DeliveryEvent> => {
  if (command.type === 'KeepTimestamp') return keepTimestamp(command, state);
  if (command.type !== 'RecordAttempt') return assertNever(command);
  const { message, attempt, outcome, policy, now } = command.data;
  // A re-delivered record whose outcome is already known changes nothing (at-least-once consumers).
  if (state.finished || attempt <= state.attemptsRecorded) return [];
  const at = now.toISOString();
  const { messageId, appId, messenger, batchId, keyId } = message;
  // A copy of a deferred record, handed before its time: the look it asks for is already planned.
  if (state.deferredUntil !== null && now.getTime() < Date.parse(state.deferredUntil)) return [];
  if (!outcome.ok && 'deferred' in outcome) {
    const since = state.deferredSince ?? at;
    if (now.getTime() - Date.parse(since) >= policy.identityWaitMs)
      return [
        {
          type: 'MessageAbandoned',
          data: {
            messageId,
            appId,
            messenger,
            attempts: state.attemptsRecorded,
            reason: `Gave up after waiting ${Math.round(policy.identityWaitMs / 60_000)} minutes for the bot's identity: ${outcome.reason}`,
            abandonedAt: at,
          },
        },
      ];
    const dueAt = new Date(now.getTime() + deferDelayMs(policy, state.deferrals + 1)).toISOString();
    return [
      {
        type: 'DeliveryDeferred',
        data: { messageId, appId, messenger, batchId, keyId, attempt, reason: outcome.reason, deferredAt: at, retry: { attempt, dueAt }, ...(message.split ? { split: true as const } : {}) },
      },
    ];
  }
  if (outcome.ok) return [{ type: 'MessageDelivered', data: { messageId, appId, messenger, attempt, deliveredAt: at, ...(outcome.parts !== undefined ? { parts: outcome.parts } : {}) } }];
  const failed = {
    messageId,
    appId,
    messenger,
    batchId,
    keyId,
    attempt,
    reason: outcome.reason,
    permanent: outcome.permanent,
    failedAt: at,
    ...(message.split ? { split: true as const } : {}),
    ...(outcome.partsDelivered ? { partsDelivered: outcome.partsDelivered } : {}),
  };
  const last = outcome.permanent || attempt >= policy.maxAttempts;
  if (last) {
    return [
      { type: 'DeliveryAttemptFailed', data: failed },
      {
        type: 'MessageAbandoned',
        data: {
          messageId,
          appId,
          messenger,
          attempts: attempt,
          reason: outcome.permanent ? outcome.reason : `Gave up after ${attempt} attempts: ${outcome.reason}`,
          abandonedAt: at,
        },
      },
    ];
  }
  const dueAt = new Date(now.getTime() + retryDelayMs(policy, attempt)).toISOString();
  return [{ type: 'DeliveryAttemptFailed', data: { ...failed, permanent: false, retry: { attempt: attempt + 1, dueAt } } }];
};

export const evolve = (state: DeliveryState, event: DeliveryEvent): DeliveryState => {
  switch (event.type) {
    case 'MessageDelivered':
      return { ...state, attemptsRecorded: event.data.attempt, finished: true };
    case 'DeliveryAttemptFailed':
      // The identity was there for this attempt: a later absence waits its own time.
      return { ...state, attemptsRecorded: event.data.attempt, partsDelivered: event.data.partsDelivered ?? state.partsDelivered, deferredSince: null, deferrals: 0, deferredUntil: null };
    case 'MessageAbandoned':
      return { ...state, finished: true };
    case 'DeliveryDeferred':
      return { ...state, deferredSince: state.deferredSince ?? event.data.deferredAt, deferrals: state.deferrals + 1, deferredUntil: event.data.retry.dueAt };
    case 'DeliveryTimestamped':
      if (state.timestamps[event.data.part] !== undefined) return state;
      return { ...state, timestamps: { ...state.timestamps, [event.data.part]: event.data.timestamp } };
    default:
      return assertNever(event);
  }
};

export const initialState = (): DeliveryState => ({ attemptsRecorded: 0, finished: false, partsDelivered: 0, deferredSince: null, deferrals: 0, deferredUntil: null, timestamps: {} });

export const deliveryDecider: Decider<DeliveryState, DeliveryCommand, DeliveryEvent> = { decide, evolve, initialState };
