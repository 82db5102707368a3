import type { Messenger } from '../shared/messengers.ts';

/**
 * Record what a contact wrote to an app's bot identity. The plaintext (`content`, `groupId`)
 * decides the flags; only its sealed form (`sealed`, under data key `keyId`) is recorded.
 */
export interface ReceiveMessage {
  type: 'ReceiveMessage';
  data: {
    messageId: string;
    appId: string;
    appMessengerId: string;
    messenger: Messenger;
    content: string;
    groupId?: string;
    keyId: string;
    sealed: string;
    timestamp?: number;
    now: Date;
  };
}

export type InboundCommand = ReceiveMessage;
