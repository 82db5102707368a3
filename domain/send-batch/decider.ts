import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { SendBatchCommand } from './commands.ts';
import type { SendBatchEvent } from './events.ts';

/** A send batch stream is written once: the accepted messages of one send call, as one event. */
export const sendBatchStreamName = (batchId: string) => `sendbatch-${batchId}`;

export type SendBatchState = { status: 'none' } | { status: 'accepted' };

export const decide = (command: SendBatchCommand, state: SendBatchState): Decision<SendBatchEvent> => {
  switch (command.type) {
    case 'AcceptMessages': {
      if (state.status !== 'none') return domainError('conflict', 'Batch already recorded');
      const { batchId, credentialId, userId, messages, bodies, now } = command.data;
      if (messages.length === 0) return [];
      const sealed = (message: (typeof messages)[number]) => bodies.some((body) => body.keyId === message.keyId && body.appId === message.appId);
      if (!messages.every(sealed)) return domainError('validation', 'Every message needs its sealed body');
      return [{ type: 'MessagesAccepted', data: { batchId, credentialId, userId, messages, bodies, acceptedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command.type);
  }
};

export const evolve = (_state: SendBatchState, event: SendBatchEvent): SendBatchState => {
  switch (event.type) {
    case 'MessagesAccepted':
      return { status: 'accepted' };
    default:
      return assertNever(event.type);
  }
};

export const initialState = (): SendBatchState => ({ status: 'none' });

export const sendBatchDecider: Decider<SendBatchState, SendBatchCommand, SendBatchEvent> = { decide, evolve, initialState };
