import type { Messenger } from '../shared/messengers.ts';

/** One outbound message as a client sent it: in memory only; the history keeps its private part sealed. */
export interface OutboundMessage {
  messageId: string;
  appId: string;
  messenger: Messenger;
  contactId: string;
  text: string;
  groupId?: string;
  /** The client asked for numbered parts when the text is over the messenger's display limit. */
  split?: true;
}

/** What the history and the queues say in clear of an accepted message: who, to which app, on which messenger. */
export interface AcceptedMessage {
  messageId: string;
  appId: string;
  messenger: Messenger;
  /** The data key that seals its body (docs/privacy.md). */
  keyId: string;
  /** Over the messenger's display limit, deliver numbered parts (the send item's `split`). */
  split?: true;
}

export type { MessageBody } from '../shared/message-body.ts';

/**
 * The sealed bodies of one app's messages in a batch, under one data key, in the order of the
 * event's `messages` that name this key: their `bodyStrings` (format s2), or, in events written
 * by Relay 0.1 before it, a JSON `MessageBody[]` (s1).
 */
export interface SealedBodies {
  keyId: string;
  appId: string;
  sealed: string;
}

/** An accepted message and where its body is: what a delivery attempt needs. */
export interface OutboundRef extends AcceptedMessage {
  batchId: string;
}

/** What a batch's sealed payload of one data key is bound to (its additional authenticated data): it opens for that batch and key only. */
export const bodiesBinding = (batchId: string, keyId: string) => `sendbatch-${batchId}/${keyId}`;
