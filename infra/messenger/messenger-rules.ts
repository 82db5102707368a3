import { GroupOperationError, type Messenger } from './port.ts';

/**
 * What every connector of a messenger checks before it hands a message to the messenger: the
 * contact id formats the messenger accepts (the interface's table) and its display limit. A
 * message that breaks them fails permanently, with a reason that never repeats the contact id
 * (reasons are kept in clear in the history).
 *
 * Signal: an E.164 number, a registered username (`name.01`), or the ACI (a UUID) that Signal
 * gives as the sender of a contact who hides their number, so that a reply can use the inbound
 * message's own contactId.
 */
/** A Signal account's number (E.164). */
export const SIGNAL_NUMBER = /^\+[1-9]\d{6,14}$/;
/** A Signal account's ACI: the identity of an account without a (visible) number. */
export const SIGNAL_ACI = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const SIGNAL_USERNAME = /^[A-Za-z][A-Za-z0-9_]{2,31}\.\d{2,9}$/;
const anyOf = (...patterns: RegExp[]) => new RegExp(patterns.map((p) => `(?:${p.source})`).join('|'));

const FORMATS: Record<Messenger, { pattern: RegExp; description: string; maxLength: number }> = {
  signal: {
    pattern: anyOf(SIGNAL_NUMBER, SIGNAL_USERNAME, SIGNAL_ACI),
    description: 'an E.164 phone number or a registered username',
    maxLength: 2000,
  },
  // A contact id, or `member-<n>` for a group member the bot has no direct contact for (docs/messengers.md).
  simplex: { pattern: /^(?:\d{1,19}|member-\d{1,19})$/, description: 'a numeric user id', maxLength: 8000 },
  session: { pattern: /^05[0-9a-fA-F]{64}$/, description: 'a 66-character hex Session ID starting with 05', maxLength: 2000 },
};

/**
 * The most members a group on the messenger has: Signal's groups hold 1,000; Session's closed
 * groups 100; SimpleX sets no limit of its own (a group's members each keep a connection to every
 * other), so Relay takes Signal's.
 */
const GROUP_MEMBER_LIMITS: Record<Messenger, number> = { signal: 1000, simplex: 1000, session: 100 };
export const groupMemberLimitOf = (messenger: Messenger): number => GROUP_MEMBER_LIMITS[messenger];

/** The messenger's display limit, in characters. */
export const displayLimitOf = (messenger: Messenger): number => FORMATS[messenger].maxLength;

/** Why a messenger would refuse this contact id (not in its formats), or undefined when it would take it. */
export const contactRejectionOf = (messenger: Messenger, contactId: string): string | undefined => {
  const format = FORMATS[messenger];
  return format.pattern.test(contactId) ? undefined : `Invalid contactId for ${messenger}: expected ${format.description}`;
};

/** A group operation on a contact outside the messenger's formats is refused for good (the reason never repeats it). */
export const checkGroupContact = (messenger: Messenger, contactId: string): void => {
  const rejection = contactRejectionOf(messenger, contactId);
  if (rejection) throw new GroupOperationError(rejection);
};

/** Why a messenger would refuse this delivery outright, or undefined when it would take it. */
export const rejectionOf = (messenger: Messenger, contactId: string, text: string): string | undefined => {
  const format = FORMATS[messenger];
  const contact = contactRejectionOf(messenger, contactId);
  if (contact) return contact;
  if ([...text].length > format.maxLength) return `Message exceeds the ${messenger} limit of ${format.maxLength} characters`;
  return undefined;
};
