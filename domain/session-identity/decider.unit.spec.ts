import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { sessionIdentityDecider } from './decider.ts';
import type { SessionIdentityEvent } from './events.ts';

const spec = deciderSpec(sessionIdentityDecider);
const now = new Date('2026-05-01T10:00:00.000Z');
const BOT = `05${'ab'.repeat(32)}`;
const OTHER = `05${'cd'.repeat(32)}`;
const keep = (sessionId: string, origin: 'new' | 'imported' = 'new') => ({
  type: 'KeepSessionIdentity' as const,
  data: { appMessengerId: 'am_1', sessionId, secretEncrypted: `v1:sealed-${sessionId.slice(2, 6)}`, origin, now },
});
const kept: SessionIdentityEvent = {
  type: 'SessionIdentityKept',
  data: { appMessengerId: 'am_1', sessionId: BOT, secretEncrypted: 'v1:sealed-abab', origin: 'new', keptAt: now.toISOString() },
};

describe('session identity decider', () => {
  it('keeps the first identity of an app-messenger', () => {
    spec.given([]).when(keep(BOT)).then([kept]);
    spec.given([]).when(keep(BOT, 'imported')).then([{ ...kept, data: { ...kept.data, origin: 'imported' } }]);
  });

  it('keeps the same identity once', () => {
    spec.given([kept]).when(keep(BOT, 'imported')).thenNothingHappens();
  });

  it('refuses another identity: the Session ID is the address contacts write to', () => {
    spec.given([kept]).when(keep(OTHER)).thenFails('conflict', `The app-messenger am_1 already has the Session identity ${BOT}`);
  });

  it('advances the send clock only forward', () => {
    const advance = (upTo: number) => ({ type: 'AdvanceSendClock' as const, data: { appMessengerId: 'am_1', upTo, now } });
    const advanced = (upTo: number): SessionIdentityEvent => ({ type: 'SessionSendClockAdvanced', data: { appMessengerId: 'am_1', upTo, advancedAt: now.toISOString() } });
    spec.given([kept]).when(advance(1_000)).then([advanced(1_000)]);
    spec.given([kept, advanced(1_000)]).when(advance(1_000)).thenNothingHappens();
    spec.given([kept, advanced(2_000)]).when(advance(1_500)).thenNothingHappens();
    spec.given([]).when(advance(1_000)).thenFails('not_found', 'The app-messenger am_1 has no Session identity');
  });
});
