/**
 * Rules for the text a client gives Relay: lengths are counted in characters (Unicode code
 * points, what a person counts: an emoji is one), and text that no store can keep faithfully is
 * refused: NUL (PostgreSQL's text cannot hold it) and unpaired UTF-16 surrogates (half a
 * character: no UTF-8 encoding, jsonb refuses them). Names are one line: no control characters.
 */

/** The caps of every free-text field of both APIs (docs/limits.md). */
export const TEXT_LIMITS = {
  /** The interface's message limit, after trimming. */
  message: 10_000,
  /** A contact id of any of the three messengers fits (E.164, Signal usernames, SimpleX ids, 66-hex Session ids). */
  contactId: 256,
  groupId: 256,
  /** Names of users, apps and credentials. */
  name: 100,
  email: 254,
  webhookUrl: 2048,
  webhookSecret: 1024,
  headerName: 64,
} as const;

/** Characters (code points) in `text`; an unpaired surrogate counts as one. */
export const characterCount = (text: string): number => {
  let pairs = 0;
  for (let i = 0; i < text.length - 1; i++) {
    const unit = text.charCodeAt(i);
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        pairs++;
        i++;
      }
    }
  }
  return text.length - pairs;
};

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f\u007f]/;

/** Whether a store can keep `text` as it is: no NUL, no unpaired surrogate (and, for a one-line text, no control character). */
export const isStorableText = (text: string, oneLine = false): boolean =>
  text.isWellFormed() && !text.includes('\u0000') && !(oneLine && CONTROL.test(text));

export type TextProblem = 'too long' | 'invalid characters';

/** What is wrong with `text` as a field capped at `max` characters, if anything. */
export const textProblem = (text: string, max: number, oneLine = false): TextProblem | undefined => {
  if (!isStorableText(text, oneLine)) return 'invalid characters';
  // Cheap first: a string of at most `max` UTF-16 units has at most `max` characters.
  if (text.length > max && characterCount(text) > max) return 'too long';
  return undefined;
};

/** The error of a field in the words the interface uses for the message (`Message exceeds 10000 character limit`). */
export const textError = (field: string, problem: TextProblem, max: number): string =>
  problem === 'too long' ? `${field} exceeds ${max} character limit` : `${field} contains invalid characters`;
