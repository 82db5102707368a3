import type { Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { SendBatchEvent } from './events.ts';
import type { OutboundMessage } from './message.ts';

export const sendBatchStreamName = (batchId: string) => `sendbatch-${batchId}`;

export interface SendMessages {
  type: 'SendMessages';
  data: { batchId: string; credentialId: string; userId: string; messages: OutboundMessage[]; now: Date };
}

/** A batch stream is written once: the accepted messages of one send call, as one event. */
export const decideSendMessages = (command: SendMessages, streamExists: boolean): Decision<SendBatchEvent> => {
  if (streamExists) return domainError('conflict', 'Batch already recorded');
  const { batchId, credentialId, userId, messages, now } = command.data;
  if (messages.length === 0) return [];
  return [{ type: 'MessagesAccepted', data: { batchId, credentialId, userId, messages, acceptedAt: now.toISOString() } }];
};
