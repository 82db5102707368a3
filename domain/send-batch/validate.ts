import { MESSENGERS, isMessenger } from '../shared/messengers.ts';
import { TEXT_LIMITS, textError, textProblem } from '../shared/text.ts';
import type { OutboundMessage } from './message.ts';

export const MAX_BATCH = 50;
export const MAX_MESSAGE_LENGTH = TEXT_LIMITS.message;

/** An item of a send request after its JSON shape was checked: every field absent or a string. */
export interface SendMessageInput {
  appId?: string;
  contactId?: string;
  messenger?: string;
  message?: string;
  groupId?: string;
  /** Deliver a message over the messenger's display limit as numbered parts. */
  split?: boolean;
}

export const SEND_ERRORS = {
  appIdMissing: 'Missing required field: appId',
  contactIdMissing: 'Missing required field: contactId',
  messageMissing: 'Missing required field: message',
  messageTooLong: `Message exceeds ${MAX_MESSAGE_LENGTH} character limit`,
  messengerInvalid: `Invalid messenger. Must be one of: ${MESSENGERS.join(', ')}`,
  appIdForeign: 'AppId not associated with this API key',
  // Not in the interface's table: limits it leaves open (docs/limits.md).
  contactIdTooLong: textError('ContactId', 'too long', TEXT_LIMITS.contactId),
  contactIdInvalid: textError('ContactId', 'invalid characters', TEXT_LIMITS.contactId),
  messageInvalid: textError('Message', 'invalid characters', TEXT_LIMITS.message),
  groupIdTooLong: textError('GroupId', 'too long', TEXT_LIMITS.groupId),
  groupIdInvalid: textError('GroupId', 'invalid characters', TEXT_LIMITS.groupId),
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

/**
 * Validates one item of a batch in the order of the interface's error table; the caps it leaves
 * open come right after the rule of the same field. Lengths are counted in characters (code
 * points). An app id longer than any app id is simply not one of the key's.
 */
export const validateSendItem = (item: SendMessageInput, keyAppIds: readonly string[]): ValidatedItem => {
  const echo = { appId: item.appId ?? '', contactId: item.contactId ?? '', messenger: item.messenger ?? '' };
  const fail = (error: string): ValidatedItem => ({ ok: false, failure: { ...echo, error } });
  if (echo.appId.trim() === '') return fail(SEND_ERRORS.appIdMissing);
  if (echo.contactId.trim() === '') return fail(SEND_ERRORS.contactIdMissing);
  const contactProblem = textProblem(echo.contactId, TEXT_LIMITS.contactId, true);
  if (contactProblem) return fail(contactProblem === 'too long' ? SEND_ERRORS.contactIdTooLong : SEND_ERRORS.contactIdInvalid);
  const text = (item.message ?? '').trim();
  if (text === '') return fail(SEND_ERRORS.messageMissing);
  const textIssue = textProblem(text, MAX_MESSAGE_LENGTH);
  if (textIssue === 'too long') return fail(SEND_ERRORS.messageTooLong);
  if (textIssue) return fail(SEND_ERRORS.messageInvalid);
  if (!isMessenger(item.messenger)) return fail(SEND_ERRORS.messengerInvalid);
  if (!keyAppIds.includes(echo.appId)) return fail(SEND_ERRORS.appIdForeign);
  const groupId = item.groupId?.trim();
  const groupProblem = groupId ? textProblem(groupId, TEXT_LIMITS.groupId, true) : undefined;
  if (groupProblem) return fail(groupProblem === 'too long' ? SEND_ERRORS.groupIdTooLong : SEND_ERRORS.groupIdInvalid);
  return {
    ok: true,
    message: {
      appId: echo.appId,
      messenger: item.messenger,
      contactId: echo.contactId,
      text,
      ...(groupId ? { groupId } : {}),
      ...(item.split === true ? { split: true as const } : {}),
    },
  };
};
