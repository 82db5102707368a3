import { describe, expect, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import type { ReceiveMessage } from './commands.ts';
import { inboundDecider } from './decider.ts';
import type { InboundEvent } from './events.ts';
import { parseCommand } from './slash-commands.ts';

const spec = deciderSpec(inboundDecider);

const now = new Date('2026-01-02T03:04:05.000Z');
const receive = (overrides: Partial<ReceiveMessage['data']> = {}): ReceiveMessage => ({
  type: 'ReceiveMessage',
  data: { messageId: 'm1', appId: 'app_1', appMessengerId: 'am_1', messenger: 'signal', content: 'hi', keyId: 'k1', sealed: 's1:body', now, ...overrides },
});

const received = (overrides: Partial<Extract<InboundEvent, { type: 'InboundMessageReceived' }>['data']> = {}): InboundEvent => ({
  type: 'InboundMessageReceived',
  data: {
    messageId: 'm1',
    appId: 'app_1',
    appMessengerId: 'am_1',
    messenger: 'signal',
    keyId: 'k1',
    sealed: 's1:body',
    timestamp: now.getTime(),
    isGroupMessage: false,
    isCommand: false,
    receivedAt: now.toISOString(),
    ...overrides,
  },
});

describe('inbound decider', () => {
  it('records a direct message, falling back to the receive time', () => spec.given([]).when(receive()).then([received()]));

  it('keeps the messenger timestamp and flags group messages and commands', () =>
    spec
      .given([])
      .when(receive({ timestamp: 42, groupId: ' g1 ', content: '/signin 1234' }))
      .then([received({ timestamp: 42, isGroupMessage: true, isCommand: true, command: 'signin' })]));

  it('keeps neither the text nor the contact in clear', () => {
    const [event] = inboundDecider.decide(receive({ content: 'my secret', groupId: 'g-secret' }), inboundDecider.initialState()) as InboundEvent[];
    expect(JSON.stringify(event)).not.toMatch(/my secret|g-secret/);
  });

  it('records a message seen before only once', () => spec.given([received()]).when(receive()).thenNothingHappens());

  it('recognises only known slash-commands', () => {
    expect(parseCommand('/start')).toBe('start');
    expect(parseCommand('  /Help me')).toBe('help');
    expect(parseCommand('/start@bot')).toBe('start');
    expect(parseCommand('/unknown')).toBeUndefined();
    expect(parseCommand('hello /start')).toBeUndefined();
    expect(parseCommand('/starts')).toBeUndefined();
  });

  describe('webhook attempts', () => {
    const attempt = { messageId: 'm1', appId: 'app_1', attempt: 2, ok: false, status: 503, reason: 'The webhook answered 503', durationMs: 12 };
    const recordAttempt = { type: 'RecordWebhookAttempt', data: { ...attempt, now } } as const;
    const attempted: InboundEvent = { type: 'InboundWebhookAttempted', data: { ...attempt, attemptedAt: now.toISOString() } };
    const abandoned: InboundEvent = { type: 'InboundWebhookAbandoned', data: { messageId: 'm1', appId: 'app_1', attempts: 8, lastStatus: 503, reason: 'x', abandonedAt: now.toISOString() } };

    it('records an attempt of a received message, with its status, reason and duration', () => spec.given([received()]).when(recordAttempt).then([attempted]));

    it('records attempts one after the other (the message stays received)', () => spec.given([received(), attempted]).when(recordAttempt).then([attempted]));

    it('records nothing for a message it never received, or one given up on', () => {
      spec.given([]).when(recordAttempt).thenNothingHappens();
      spec.given([received(), abandoned]).when(recordAttempt).thenNothingHappens();
    });
  });
});
