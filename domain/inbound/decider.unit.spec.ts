import { describe, expect, it } from 'vitest';
import { parseCommand } from './commands.ts';
import { decideReceiveMessage, type ReceiveMessage } from './decider.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const receive = (overrides: Partial<ReceiveMessage['data']> = {}): ReceiveMessage => ({
  type: 'ReceiveMessage',
  data: { messageId: 'm1', appId: 'app_1', appMessengerId: 'am_1', messenger: 'signal', contactId: '+1555', content: 'hi', now, ...overrides },
});

describe('inbound decider', () => {
  it('records a direct message, falling back to the receive time', () => {
    expect(decideReceiveMessage(receive(), false)).toEqual([
      {
        type: 'InboundMessageReceived',
        data: {
          messageId: 'm1',
          appId: 'app_1',
          appMessengerId: 'am_1',
          messenger: 'signal',
          contactId: '+1555',
          content: 'hi',
          timestamp: now.getTime(),
          isGroupMessage: false,
          isCommand: false,
          receivedAt: now.toISOString(),
        },
      },
    ]);
  });

  it('keeps the messenger timestamp and flags group messages and commands', () => {
    const [event] = decideReceiveMessage(receive({ timestamp: 42, groupId: 'g1', content: '/signin 1234' }), false) as never[];
    expect(event).toMatchObject({ data: { timestamp: 42, groupId: 'g1', isGroupMessage: true, isCommand: true, command: 'signin' } });
  });

  it('records a message seen before only once', () => expect(decideReceiveMessage(receive(), true)).toEqual([]));

  it('recognises only known slash-commands', () => {
    expect(parseCommand('/start')).toBe('start');
    expect(parseCommand('  /Help me')).toBe('help');
    expect(parseCommand('/start@bot')).toBe('start');
    expect(parseCommand('/unknown')).toBeUndefined();
    expect(parseCommand('hello /start')).toBeUndefined();
    expect(parseCommand('/starts')).toBeUndefined();
  });
});
