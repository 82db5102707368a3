import type { InboundMessage } from '../../domain/inbound/events.ts';
import type { OutboundRef } from '../../domain/send-batch/message.ts';

/**
 * The values of the broker's records. None carries a body or a contact id in clear: outbound
 * records are references to the sealed batch, inbound records carry the sealed payload.
 */

/** On `outbound.<messenger>` and `outbound.retry.<n>`: attempt `attempt` of a message. */
export interface OutboundRecord {
  message: OutboundRef | LegacyOutboundMessage;
  attempt: number;
}

/** On `inbound.<appId>`: what poll pops (sealed). */
export type InboundRecord = InboundMessage | LegacyInboundMessage;

/**
 * Records written by a Relay older than privacy at rest (bodies in clear), still queued after an
 * upgrade: they are delivered or polled once like the others (docs/privacy.md, "Upgrading").
 */
export interface LegacyOutboundMessage {
  messageId: string;
  appId: string;
  messenger: OutboundRef['messenger'];
  contactId: string;
  text: string;
  groupId?: string;
}

export interface LegacyInboundMessage extends Omit<InboundMessage, 'keyId' | 'sealed'> {
  contactId: string;
  content: string;
  groupId?: string;
}

export const isLegacyOutbound = (message: OutboundRecord['message']): message is LegacyOutboundMessage => 'text' in message;
export const isLegacyInbound = (message: InboundRecord): message is LegacyInboundMessage => !('sealed' in message);

/** On `outbound.dead`: that a message was abandoned, and why. */
export interface DeadNotice {
  messageId: string;
  appId: string;
  messenger: string;
  attempts: number;
  reason: string;
  abandonedAt: string;
}
