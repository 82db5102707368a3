import type { Messenger } from '../shared/messengers.ts';

/** On stream `inbound-<messageId>`: a contact wrote to an app's bot identity. */
export interface InboundMessage {
  messageId: string;
  appId: string;
  appMessengerId: string;
  messenger: Messenger;
  contactId: string;
  content: string;
  /** Epoch ms: the messenger's, or the receive time when it gave none. */
  timestamp: number;
  groupId?: string;
  isGroupMessage: boolean;
  isCommand: boolean;
  command?: string;
}

export type InboundEvent = { type: 'InboundMessageReceived'; data: InboundMessage & { receivedAt: string } };
