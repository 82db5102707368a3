import type { AcceptedMessage, SealedBodies } from './message.ts';

/**
 * On stream `sendbatch-<batchId>`: every message a send call accepted, durable together. In clear:
 * who sent (credential, user), which messages to which apps on which messengers, when. Sealed:
 * contact ids, texts and group ids, one payload per app (`bodies`), each under its data key.
 */
export type SendBatchEvent = {
  type: 'MessagesAccepted';
  data: { batchId: string; credentialId: string; userId: string; messages: AcceptedMessage[]; bodies: SealedBodies[]; acceptedAt: string };
};
