import type { Messenger } from '../port.ts';

/** Contact id formats each messenger accepts (the interface's table), and their display limits. */
const FORMATS: Record<Messenger, { pattern: RegExp; description: string; maxLength: number }> = {
  signal: {
    pattern: /^(\+[1-9]\d{6,14}|[A-Za-z][A-Za-z0-9_]{2,31}\.\d{2,9})$/,
    description: 'an E.164 phone number or a registered username',
    maxLength: 2000,
  },
  simplex: { pattern: /^\d{1,19}$/, description: 'a numeric user id', maxLength: 8000 },
  session: { pattern: /^05[0-9a-fA-F]{64}$/, description: 'a 66-character hex Session ID starting with 05', maxLength: 2000 },
};

/** Why a messenger would refuse this delivery outright, or undefined when it would take it. */
export const rejectionOf = (messenger: Messenger, contactId: string, text: string): string | undefined => {
  const format = FORMATS[messenger];
  if (!format.pattern.test(contactId)) return `Invalid contactId for ${messenger}: expected ${format.description}`;
  if (text.length > format.maxLength) return `Message exceeds the ${messenger} limit of ${format.maxLength} characters`;
  return undefined;
};
