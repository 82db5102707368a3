import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { shredDecider } from './decider.ts';
import type { ForgottenKey, ShredEvent } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const spec = deciderSpec(shredDecider);
const keys: ForgottenKey[] = [
  { keyId: 'k1', appId: 'app_1', subject: 'inbound-m1', reason: 'finished' },
  { keyId: 'k2', appId: 'app_2', subject: 'sendbatch-b1', reason: 'retention' },
];
const forget = { type: 'ForgetBodies' as const, data: { shredId: 's1', keys, now } };
const forgotten: ShredEvent = { type: 'BodiesForgotten', data: { shredId: 's1', keys, forgottenAt: now.toISOString() } };

describe('shred decider', () => {
  it('records the destruction of the keys of one sweep', () => spec.given([]).when(forget).then([forgotten]));
  it('records it once', () => spec.given([forgotten]).when(forget).thenNothingHappens());
  it('a sweep that found nothing records nothing', () => spec.given([]).when({ ...forget, data: { ...forget.data, keys: [] } }).thenNothingHappens());
});
