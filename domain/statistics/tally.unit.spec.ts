import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AttemptOutcome } from '../delivery/commands.ts';
import { deliveryDecider } from '../delivery/decider.ts';
import { defaultDeliveryPolicy } from '../delivery/policy.ts';
import { talliesOf, type StatisticsInput, type Tally } from './tally.ts';

const recordedAt = new Date('2026-03-01T10:00:09.000Z');
const at = '2026-03-01T10:00:05.000Z';
const atMs = Date.parse(at);
const event = (type: string, data: Record<string, unknown>): StatisticsInput => ({ type, data, recordedAt });
const attempt = (n: number, retry: boolean) => ({
  messageId: 'm1', appId: 'app_1', messenger: 'signal', batchId: 'b1', keyId: 'k1', attempt: n, reason: 'down', permanent: false, failedAt: at,
  ...(retry ? { retry: { attempt: n + 1, dueAt: at } } : {}),
});

/** given(event).then(tallies): what one event adds. */
const given = (input: StatisticsInput) => ({ then: (expected: Tally[]) => expect(talliesOf(input)).toEqual(expected) });
const signal = { appId: 'app_1', messenger: 'signal', atMs };

describe('statistics tallies', () => {
  it('given a send batch, then each app-messenger gets its accepted messages, all waiting', () =>
    given(
      event('MessagesAccepted', {
        batchId: 'b1', credentialId: 'c1', userId: 'usr_1', acceptedAt: at, bodies: [{ keyId: 'k1', appId: 'app_1', sealed: 's2:secret' }],
        messages: [
          { messageId: 'm1', appId: 'app_1', messenger: 'signal', keyId: 'k1' },
          { messageId: 'm2', appId: 'app_1', messenger: 'signal', keyId: 'k1' },
          { messageId: 'm3', appId: 'app_1', messenger: 'simplex', keyId: 'k1' },
        ],
      }),
    ).then([
      { ...signal, counts: { accepted: 2 }, waiting: 2, retrying: 0 },
      { appId: 'app_1', messenger: 'simplex', atMs, counts: { accepted: 1 }, waiting: 1, retrying: 0 },
    ]));

  it('given a delivery at the first attempt, then delivered, and it waits no more', () =>
    given(event('MessageDelivered', { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1, deliveredAt: at })).then([
      { ...signal, counts: { delivered: 1 }, waiting: -1, retrying: 0 },
    ]));

  it('given a delivery at a later attempt, then it also leaves the retrying messages', () =>
    given(event('MessageDelivered', { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 3, deliveredAt: at })).then([
      { ...signal, counts: { delivered: 1 }, waiting: -1, retrying: -1 },
    ]));

  it('given the first failed attempt, then one failed message and one failed attempt, and the message is retrying', () =>
    given(event('DeliveryAttemptFailed', attempt(1, true))).then([{ ...signal, counts: { failed: 1, failedAttempts: 1 }, waiting: 0, retrying: 1 }]));

  it('given a later failed attempt, then only a failed attempt: the message was counted at its first', () =>
    given(event('DeliveryAttemptFailed', attempt(2, true))).then([{ ...signal, counts: { failedAttempts: 1 }, waiting: 0, retrying: 0 }]));

  it('given a final failure and its abandonment (one append), then the message leaves waiting and retrying', () => {
    // Third attempt: it was retrying since the first; the final failure adds nothing, the abandonment takes it away.
    const third = [...talliesOf(event('DeliveryAttemptFailed', attempt(3, false))), ...talliesOf(event('MessageAbandoned', { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempts: 3, reason: 'r', abandonedAt: at }))];
    expect(third.reduce((sum, t) => sum + t.retrying, 0)).toBe(-1);
    expect(third.reduce((sum, t) => sum + t.waiting, 0)).toBe(-1);
    // A permanent failure of the first attempt: it enters and leaves retrying in the same append.
    const permanent = [...talliesOf(event('DeliveryAttemptFailed', { ...attempt(1, false), permanent: true })), ...talliesOf(event('MessageAbandoned', { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempts: 1, reason: 'r', abandonedAt: at }))];
    expect(permanent.reduce((sum, t) => sum + t.retrying, 0)).toBe(0);
    expect(permanent.map((t) => t.counts)).toEqual([{ failed: 1, failedAttempts: 1 }, { abandoned: 1 }]);
  });

  it('given an abandonment with no attempt made (its bot identity never came), then it was never retrying', () =>
    given(event('MessageAbandoned', { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempts: 0, reason: 'r', abandonedAt: at })).then([
      { ...signal, counts: { abandoned: 1 }, waiting: -1, retrying: 0 },
    ]));

  it('given an inbound message, then received, at the time it was received', () =>
    given(
      event('InboundMessageReceived', { messageId: 'i1', appId: 'app_1', appMessengerId: 'am_1', messenger: 'signal', keyId: 'k', sealed: 's2:x', timestamp: 1, isGroupMessage: false, isCommand: false, receivedAt: at }),
    ).then([{ ...signal, counts: { received: 1 }, waiting: 0, retrying: 0 }]));

  it('given an event without its own time, then its commit time is used', () =>
    given(event('MessageDelivered', { messageId: 'm1', appId: 'app_1', messenger: 'signal', attempt: 1 })).then([
      { ...signal, atMs: recordedAt.getTime(), counts: { delivered: 1 }, waiting: -1, retrying: 0 },
    ]));

  it('given a deferral, another type or a malformed event, then nothing is counted', () => {
    expect(talliesOf(event('DeliveryDeferred', { ...attempt(1, true), deferredAt: at }))).toEqual([]);
    expect(talliesOf(event('AppUpdated', { appId: 'app_1' }))).toEqual([]);
    expect(talliesOf(event('MessageDelivered', {}))).toEqual([]);
    expect(talliesOf(event('MessagesAccepted', { messages: 'no' }))).toEqual([]);
    expect(talliesOf({ type: 'MessageDelivered', data: null, recordedAt })).toEqual([]);
  });
});

describe('statistics tallies against the delivery decider', () => {
  it('given any course of attempts the decider allows, then waiting and retrying say where the message is after each outcome', () => {
    const outcome = fc.oneof(
      fc.constant<AttemptOutcome>({ ok: true }),
      fc.constant<AttemptOutcome>({ ok: false, permanent: false, reason: 'down' }),
      fc.constant<AttemptOutcome>({ ok: false, permanent: true, reason: 'bad contact' }),
      fc.constant<AttemptOutcome>({ ok: false, deferred: true, reason: 'no identity' }),
    );
    fc.assert(
      fc.property(fc.array(fc.tuple(outcome, fc.integer({ min: 1, max: 30 * 60_000 })), { minLength: 1, maxLength: 20 }), (course) => {
        const message = { messageId: 'm1', appId: 'app_1', messenger: 'signal' as const, batchId: 'b1', keyId: 'k1' };
        let state = deliveryDecider.initialState();
        let now = Date.parse('2026-03-01T10:00:00.000Z');
        let attempt = 1;
        let waiting = 1; // accepted
        let retrying = 0;
        let failed = 0;
        let failedAttempts = 0;
        for (const [result, pause] of course) {
          if (state.finished) break;
          now += pause;
          const events = deliveryDecider.decide({ type: 'RecordAttempt', data: { message, attempt, outcome: result, policy: defaultDeliveryPolicy, now: new Date(now) } }, state);
          if (!Array.isArray(events)) throw new Error('the decider refused');
          for (const e of events) {
            state = deliveryDecider.evolve(state, e);
            for (const tally of talliesOf({ ...e, recordedAt: new Date(now) })) {
              waiting += tally.waiting;
              retrying += tally.retrying;
              failed += tally.counts.failed ?? 0;
              failedAttempts += tally.counts.failedAttempts ?? 0;
            }
            if (e.type === 'DeliveryAttemptFailed' && e.data.retry) attempt = e.data.retry.attempt;
          }
          // After each outcome: waiting until finished, retrying while waiting after a failed attempt.
          expect(waiting).toBe(state.finished ? 0 : 1);
          expect(retrying).toBe(!state.finished && state.attemptsRecorded >= 1 ? 1 : 0);
          expect(failed).toBe(failedAttempts > 0 ? 1 : 0);
        }
      }),
      { numRuns: 500 },
    );
  });
});
