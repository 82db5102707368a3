/**
 * What simplex-chat's refusal of a `/_send` means for a delivery (docs/messengers.md). Reasons
 * never carry the contact or group id: they stay in clear in the history.
 */
import type { DeliveryResult } from '../port.ts';
import { SimplexUnavailableError, type SimplexCommandError } from './simplex-client.ts';

const PERMANENT: Record<string, string> = {
  'errorStore/contactNotFound': "The contact is not a contact of the bot's SimpleX user",
  'errorStore/groupNotFound': "The group is not a group of the bot's SimpleX user",
  'error/contactNotActive': 'The contact is no longer active',
  'error/contactDisabled': 'The contact is disabled',
  'error/groupNotJoined': "The bot's SimpleX user has not joined the group",
  'error/groupMemberUserRemoved': "The bot's SimpleX user was removed from the group",
  'error/groupUserRole': "The bot's SimpleX user may not send to the group",
};

const TRANSIENT: Record<string, string> = {
  'error/contactNotReady': 'The contact is still connecting',
};

export const outcomeOfSendError = (error: SimplexCommandError): DeliveryResult => {
  // Another client of simplex-chat switched its active user between our selection and the send:
  // nothing was sent, and no answer of the messenger about this message; tried again, no attempt spent.
  if (error.kind === 'error/differentActiveUser') throw new SimplexUnavailableError('simplex-chat had another active user; the send is tried again');
  const permanent = PERMANENT[error.kind];
  if (permanent) return { ok: false, permanent: true, reason: permanent };
  return { ok: false, permanent: false, reason: TRANSIENT[error.kind] ?? `simplex-chat failed to send (${error.kind})` };
};
