import { expect } from 'vitest';
import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { deliveryDecider } from './decider.ts';
import type { DeliveryEvent } from './events.ts';
import { defaultDeliveryPolicy as policy, retryDelayMs } from './policy.ts';
import type { OutboundRef } from '../send-batch/message.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const spec = deciderSpec(deliveryDecider);
const message: OutboundRef = { messageId: 'm1', appId: 'app_1', messenger: 'signal', batchId: 'b1', keyId: 'k1' };
const fail = { ok: false as const, permanent: false, reason: 'connector down' };
const failed = (attempt: number, retry: boolean): DeliveryEvent => ({
  type: 'DeliveryAttemptFailed',
  data: {
    messageId: 'm1',
    appId: 'app_1',
    messenger: 'signal',
    batchId: 'b1',
    keyId: 'k1',
    attempt,
    reason: 'connector down',
    permanent: false,
    failedAt: at,
    ...(retry ? { retry: { attempt: attempt + 1, dueAt: new Date(now.getTime() + retryDelayMs(policy, attempt)).toISOString() } } : {}),
  },
});

describe('delivery decider', () => {
  it('backs off 1 s then 4 s by default', () => {
    expect(retryDelayMs(policy, 1)).toBe(1000);
    expect(retryDelayMs(policy, 2)).toBe(4000);
  });

  it('records a delivery', () =>
    spec
      .given([])
      .when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: { ok: true }, policy, now } })
      .then([{ type: 'MessageDelivered', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: at } }]));

  it('schedules a retry after a first failure', () =>
    spec.given([]).when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: fail, policy, now } }).then([failed(1, true)]));

  it('abandons after the third failure', () =>
    spec
      .given([failed(1, true), failed(2, true)])
      .when({ type: 'RecordAttempt', data: { message, attempt: 3, outcome: fail, policy, now } })
      .then([
        failed(3, false),
        { type: 'MessageAbandoned', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempts: 3, reason: 'Gave up after 3 attempts: connector down', abandonedAt: at } },
      ]));

  it('abandons at once on a permanent failure (a contact id the messenger rejects)', () =>
    spec
      .given([])
      .when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: { ok: false, permanent: true, reason: 'Invalid contactId' }, policy, now } })
      .then([
        { type: 'DeliveryAttemptFailed', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', batchId: 'b1', keyId: 'k1', attempt: 1, reason: 'Invalid contactId', permanent: true, failedAt: at } },
        { type: 'MessageAbandoned', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempts: 1, reason: 'Invalid contactId', abandonedAt: at } },
      ]));

  it('ignores a re-delivered attempt whose outcome is known', () => {
    spec.given([failed(1, true)]).when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: { ok: true }, policy, now } }).thenNothingHappens();
    spec
      .given([{ type: 'MessageDelivered', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: at } }])
      .when({ type: 'RecordAttempt', data: { message, attempt: 2, outcome: fail, policy, now } })
      .thenNothingHappens();
  });

  it('a split message: a failure records the parts the messenger has, and its retry stays split', () => {
    const split = { ...message, split: true as const };
    spec
      .given([])
      .when({ type: 'RecordAttempt', data: { message: split, attempt: 1, outcome: { ok: false, permanent: false, reason: 'Part 2 of 3: network', partsDelivered: 1 }, policy, now } })
      .then([
        {
          type: 'DeliveryAttemptFailed',
          data: {
            messageId: 'm1', appId: 'app_1', messenger: 'signal', batchId: 'b1', keyId: 'k1', attempt: 1, reason: 'Part 2 of 3: network', permanent: false, failedAt: at,
            split: true, partsDelivered: 1, retry: { attempt: 2, dueAt: new Date(now.getTime() + retryDelayMs(policy, 1)).toISOString() },
          },
        },
      ]);
  });

  it('a split message delivered says in how many parts', () =>
    spec
      .given([])
      .when({ type: 'RecordAttempt', data: { message: { ...message, split: true }, attempt: 1, outcome: { ok: true, parts: 3 }, policy, now } })
      .then([{ type: 'MessageDelivered', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: at, parts: 3 } }]));

  describe('while the bot identity is missing (issue 24)', () => {
    const missing = { ok: false as const, deferred: true as const, reason: "The bot's account is not on the daemon" };
    const later = (ms: number) => new Date(now.getTime() + ms);
    const deferred = (attemptAt: Date, dueInMs: number): DeliveryEvent => ({
      type: 'DeliveryDeferred',
      data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', batchId: 'b1', keyId: 'k1', attempt: 1, reason: missing.reason, deferredAt: attemptAt.toISOString(), retry: { attempt: 1, dueAt: new Date(attemptAt.getTime() + dueInMs).toISOString() } },
    });

    it('defers the same attempt, spending none, with a growing pause', () => {
      spec.given([]).when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: missing, policy, now } }).then([deferred(now, 5_000)]);
      spec
        .given([deferred(now, 5_000)])
        .when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: missing, policy, now: later(5_000) } })
        .then([deferred(later(5_000), 10_000)]);
    });

    it('ignores a copy of the record that comes before the planned look', () =>
      spec.given([deferred(now, 5_000)]).when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: { ok: true }, policy, now: later(1_000) } }).thenNothingHappens());

    it('delivers with the attempt it waited to make once the identity is back', () =>
      spec
        .given([deferred(now, 5_000)])
        .when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: { ok: true }, policy, now: later(5_000) } })
        .then([{ type: 'MessageDelivered', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: later(5_000).toISOString() } }]));

    it('abandons the message once the identity has been missing for the policy\'s wait, saying why', () =>
      spec
        .given([deferred(now, 5_000)])
        .when({ type: 'RecordAttempt', data: { message, attempt: 1, outcome: missing, policy, now: later(policy.identityWaitMs) } })
        .then([
          {
            type: 'MessageAbandoned',
            data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempts: 0, reason: "Gave up after waiting 60 minutes for the bot's identity: The bot's account is not on the daemon", abandonedAt: later(policy.identityWaitMs).toISOString() },
          },
        ]));
  });

  describe('the timestamp a message carries (Session: a repeat of one sender and timestamp is dropped)', () => {
    const stamped = (part: number, timestamp: number): DeliveryEvent => ({
      type: 'DeliveryTimestamped',
      data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, part, timestamp, timestampedAt: at },
    });
    const keep = (part: number, timestamp: number) => ({ type: 'KeepTimestamp' as const, data: { message, attempt: 1, part, timestamp, now } });

    it('keeps the first timestamp of a message before its first hand-off', () => spec.given([]).when(keep(0, 1_700_000_000_123)).then([stamped(0, 1_700_000_000_123)]));

    it('never replaces a kept timestamp (a retry, or another instance, carries the first)', () => spec.given([stamped(0, 1_700_000_000_123)]).when(keep(0, 1_700_000_009_999)).then([]));

    it('keeps one per part of a split message', () => spec.given([stamped(0, 1_700_000_000_123)]).when(keep(1, 1_700_000_000_124)).then([stamped(1, 1_700_000_000_124)]));

    it('keeps none for a finished message', () =>
      spec
        .given([{ type: 'MessageDelivered', data: { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: at } }])
        .when(keep(0, 1_700_000_000_123))
        .then([]));

    it('leaves the attempt count alone', () =>
      expect([stamped(0, 1)].reduce(deliveryDecider.evolve, deliveryDecider.initialState())).toEqual({ ...deliveryDecider.initialState(), timestamps: { 0: 1 } }));
  });
});
