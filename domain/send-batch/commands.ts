import type { AcceptedMessage, SealedBodies } from './message.ts';

/** Record the valid messages of one send call, their bodies sealed: they are accepted together or not at all. */
export interface AcceptMessages {
  type: 'AcceptMessages';
  data: { batchId: string; credentialId: string; userId: string; messages: AcceptedMessage[]; bodies: SealedBodies[]; now: Date };
}

export type SendBatchCommand = AcceptMessages;
