import type { Decision } from '../shared/decider.ts';
import type { Messenger } from '../shared/messengers.ts';
import { parseCommand } from './commands.ts';
import type { InboundEvent } from './events.ts';

export const inboundStreamName = (messageId: string) => `inbound-${messageId}`;

export interface ReceiveMessage {
  type: 'ReceiveMessage';
  data: {
    messageId: string;
    appId: string;
    appMessengerId: string;
    messenger: Messenger;
    contactId: string;
    content: string;
    timestamp?: number;
    groupId?: string;
    now: Date;
  };
}

/** A message id already received (the same messenger message seen twice) records nothing. */
export const decideReceiveMessage = (command: ReceiveMessage, alreadyReceived: boolean): Decision<InboundEvent> => {
  if (alreadyReceived) return [];
  const { now, timestamp, groupId, ...rest } = command.data;
  const command_ = parseCommand(rest.content);
  const group = groupId?.trim();
  return [
    {
      type: 'InboundMessageReceived',
      data: {
        ...rest,
        timestamp: timestamp !== undefined && Number.isFinite(timestamp) ? timestamp : now.getTime(),
        ...(group ? { groupId: group } : {}),
        isGroupMessage: Boolean(group),
        isCommand: command_ !== undefined,
        ...(command_ !== undefined ? { command: command_ } : {}),
        receivedAt: now.toISOString(),
      },
    },
  ];
};
