import { MESSENGERS, isMessenger } from '../shared/messengers.ts';
import type { OutboundMessage } from './message.ts';

export const MAX_BATCH = 50;
export const MAX_MESSAGE_LENGTH = 10_000;

/** An item of a send request after its JSON shape was checked: every field absent or a string. */
export interface SendMessageInput {
  appId?: string;
  contactId?: string;
  messenger?: string;
  message?: string;
  groupId?: string;
}

export const SEND_ERRORS = {
  appIdMissing: 'Missing required field: appId',
  contactIdMissing: 'Missing required field: contactId',
  messageMissing: 'Missing required field: message',
  messageTooLong: `Message exceeds ${MAX_MESSAGE_LENGTH} character limit`,
  messengerInvalid: `Invalid messenger. Must be one of: ${MESSENGERS.join(', ')}`,
  appIdForeign: 'AppId not associated with this API key',
} as const;

export interface FailedMessage {
  appId: string;
  contactId: string;
  messenger: string;
  error: string;
}

export type ValidatedItem =
  | { ok: true; message: Omit<OutboundMessage, 'messageId'> }
  | { ok: false; failure: FailedMessage };

/** Validates one item of a batch in the order of the interface's error table. */
export const validateSendItem = (item: SendMessageInput, keyAppIds: readonly string[]): ValidatedItem => {
  const echo = { appId: item.appId ?? '', contactId: item.contactId ?? '', messenger: item.messenger ?? '' };
  const fail = (error: string): ValidatedItem => ({ ok: false, failure: { ...echo, error } });
  if (echo.appId.trim() === '') return fail(SEND_ERRORS.appIdMissing);
  if (echo.contactId.trim() === '') return fail(SEND_ERRORS.contactIdMissing);
  const text = (item.message ?? '').trim();
  if (text === '') return fail(SEND_ERRORS.messageMissing);
  if (text.length > MAX_MESSAGE_LENGTH) return fail(SEND_ERRORS.messageTooLong);
  if (!isMessenger(item.messenger)) return fail(SEND_ERRORS.messengerInvalid);
  if (!keyAppIds.includes(echo.appId)) return fail(SEND_ERRORS.appIdForeign);
  const groupId = item.groupId?.trim();
  return {
    ok: true,
    message: {
      appId: echo.appId,
      messenger: item.messenger,
      contactId: echo.contactId,
      text,
      ...(groupId ? { groupId } : {}),
    },
  };
};
