import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { alertDecider } from './decider.ts';
import type { AlertEvent } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const spec = deciderSpec(alertDecider);
const common = { causationId: 'e1', userId: 'usr_1', category: 'sign-in' as const, channel: 'email' as const };
const sent: AlertEvent = { type: 'AlertSent', data: { ...common, subject: 'New sign-in', sentAt: now.toISOString() } };

describe('alert decider', () => {
  it('records an alert sent on a channel, once', () => {
    spec.given([]).when({ type: 'RecordAlert', data: { ...common, outcome: { sent: true, subject: 'New sign-in' }, now } }).then([sent]);
    spec.given([sent]).when({ type: 'RecordAlert', data: { ...common, outcome: { sent: true, subject: 'New sign-in' }, now } }).thenNothingHappens();
  });

  it('records an alert that could not go out, with why', () =>
    spec
      .given([])
      .when({ type: 'RecordAlert', data: { ...common, outcome: { sent: false, reason: 'The mail server did not take the mail (ECONNREFUSED)' }, now } })
      .then([{ type: 'AlertFailed', data: { ...common, reason: 'The mail server did not take the mail (ECONNREFUSED)', failedAt: now.toISOString() } }]));
});
