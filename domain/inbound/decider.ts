import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import type { InboundCommand } from './commands.ts';
import type { InboundEvent } from './events.ts';
import { parseCommand } from './slash-commands.ts';

/** One stream per inbound message: the same messenger message seen twice is recorded once. */
export const inboundStreamName = (messageId: string) => `inbound-${messageId}`;

export type InboundState = { status: 'none' } | { status: 'received' } | { status: 'abandoned' };

export const decide = (command: InboundCommand, state: InboundState): Decision<InboundEvent> => {
  switch (command.type) {
    case 'ReceiveMessage': {
      if (state.status === 'received') return [];
      const { messageId, appId, appMessengerId, messenger, content, groupId, keyId, sealed, timestamp, now } = command.data;
      const slashCommand = parseCommand(content);
      return [
        {
          type: 'InboundMessageReceived',
          data: {
            messageId,
            appId,
            appMessengerId,
            messenger,
            keyId,
            sealed,
            timestamp: timestamp !== undefined && Number.isFinite(timestamp) ? timestamp : now.getTime(),
            isGroupMessage: Boolean(groupId?.trim()),
            isCommand: slashCommand !== undefined,
            ...(slashCommand !== undefined ? { command: slashCommand } : {}),
            receivedAt: now.toISOString(),
          },
        },
      ];
    }
    case 'AbandonWebhookDelivery': {
      if (state.status !== 'received') return [];
      const { messageId, appId, attempts, lastStatus, reason, now } = command.data;
      return [{ type: 'InboundWebhookAbandoned', data: { messageId, appId, attempts, lastStatus, reason, abandonedAt: now.toISOString() } }];
    }
    case 'RecordWebhookAttempt': {
      if (state.status !== 'received') return [];
      const { now, ...attempt } = command.data;
      return [{ type: 'InboundWebhookAttempted', data: { ...attempt, attemptedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: InboundState, event: InboundEvent): InboundState => {
  switch (event.type) {
    case 'InboundMessageReceived':
      return { status: 'received' };
    case 'InboundWebhookAttempted':
      return state;
    case 'InboundWebhookAbandoned':
      return { status: 'abandoned' };
    default:
      return assertNever(event);
  }
};

export const initialState = (): InboundState => ({ status: 'none' });

export const inboundDecider: Decider<InboundState, InboundCommand, InboundEvent> = { decide, evolve, initialState };
