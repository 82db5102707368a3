import type { Messenger } from '../shared/messengers.ts';

/** One outbound message as a client sent it: in memory only; the history keeps its private part sealed. */
export interface OutboundMessage {
  messageId: string;
  appId: string;
  messenger: Messenger;
  contactId: string;
  text: string;
  groupId?: string;
}

/** What the history and the queues say in clear of an accepted message: who, to which app, on which messenger. */
export interface AcceptedMessage {
  messageId: string;
  appId: string;
  messenger: Messenger;
  /** The data key that seals its body (docs/privacy.md). */
  keyId: string;
}

/** The private part of one message, as sealed: contact id, text, group id. */
export interface MessageBody {
  c: string;
  t: string;
  g?: string;
}

/**
 * The sealed bodies of one app's messages in a batch, under one data key, in the order of the
 * event's `messages` that name this key: their `bodyStrings` (format s2), or, in events written
 * before that format, a JSON `MessageBody[]` (s1).
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

/** What is sealed of a batch's bodies under one key: contact id, text and group id (or null) of each message, in order. */
export const bodyStrings = (bodies: readonly MessageBody[]): (string | null)[] => {
  const strings = new Array<string | null>(bodies.length * 3);
  bodies.forEach((body, i) => {
    strings[i * 3] = body.c;
    strings[i * 3 + 1] = body.t;
    strings[i * 3 + 2] = body.g ?? null;
  });
  return strings;
};

/** The bodies that `bodyStrings` gave these strings; undefined when the strings are not three per message, contact id and text present. */
export const bodiesOfStrings = (strings: readonly (string | null)[]): MessageBody[] | undefined => {
  if (strings.length % 3 !== 0) return undefined;
  const bodies: MessageBody[] = [];
  for (let i = 0; i < strings.length; i += 3) {
    const [c, t, g] = [strings[i], strings[i + 1], strings[i + 2]];
    if (typeof c !== 'string' || typeof t !== 'string') return undefined;
    bodies.push(typeof g === 'string' ? { c, t, g } : { c, t });
  }
  return bodies;
};
