import type { MessageBody } from '../shared/message-body.ts';
import type { Messenger } from '../shared/messengers.ts';

/** The private part of an inbound message, as sealed: contact id, text, group id. */
export type InboundBody = MessageBody;

/**
 * On stream `inbound-<messageId>`: a contact wrote to an app's bot identity. In clear: to which
 * app, on which messenger, when, and whether it was a group message or a recognised command.
 * Sealed under its data key (`keyId`): the contact id, the text and the group id.
 */
export interface InboundMessage {
  messageId: string;
  appId: string;
  appMessengerId: string;
  messenger: Messenger;
  keyId: string;
  sealed: string;
  /** Epoch ms: the messenger's, or the receive time when it gave none. */
  timestamp: number;
  isGroupMessage: boolean;
  isCommand: boolean;
  command?: string;
}

/** One webhook attempt of an inbound message: its answer's status (null: none), or why it failed, and how long it took. Never the URL. */
export interface WebhookAttemptData {
  messageId: string;
  appId: string;
  attempt: number;
  ok: boolean;
  status: number | null;
  reason: string | null;
  durationMs: number;
}

export type InboundEvent =
  | { type: 'InboundMessageReceived'; data: InboundMessage & { receivedAt: string } }
  /** The app's webhook was called with the message: it took it (2xx), or not (the reason). */
  | { type: 'InboundWebhookAttempted'; data: WebhookAttemptData & { attemptedAt: string } }
  /**
   * An app delivered by webhook did not take the message after every attempt: it left the app's
   * queue (a dead letter), and its body is forgotten. The reason is the last attempt's (a status,
   * a timeout), never the URL.
   */
  | { type: 'InboundWebhookAbandoned'; data: { messageId: string; appId: string; attempts: number; lastStatus: number | null; reason: string; abandonedAt: string } };

/** What an inbound message's sealed payload is bound to: it opens for that message only. */
export const inboundBinding = (messageId: string) => `inbound-${messageId}`;
