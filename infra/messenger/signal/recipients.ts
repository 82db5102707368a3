import { SIGNAL_ACI, SIGNAL_NUMBER } from '../messenger-rules.ts';

/** signal-cli's recipient forms: a number or an ACI as they are, a username prefixed `u:`. */
export const recipientOf = (contactId: string): string => (SIGNAL_NUMBER.test(contactId) || SIGNAL_ACI.test(contactId) ? contactId : `u:${contactId}`);
