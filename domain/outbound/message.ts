import type { Messenger } from '../shared/messengers.ts';

/** One outbound message as accepted: what a delivery worker needs to deliver it. */
export interface OutboundMessage {
  messageId: string;
  appId: string;
  messenger: Messenger;
  contactId: string;
  text: string;
  groupId?: string;
}
