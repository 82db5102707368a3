import { CROCKFORD_ALPHABET, groupCode, normaliseCrockford } from '../shared/crockford.ts';
import type { CodePurpose } from './events.ts';

/** A messenger code: 8 characters of Crockford's base32 (40 bits), shown as `ABCD-EFGH`. */
export const CODE_LENGTH = 8;

export const displayCode = (canonical: string): string => groupCode(canonical, 4);

const COMMANDS: Record<string, CodePurpose> = { signin: 'sign-in', link: 'link' };
const CODE_COMMAND = /^\s*\/(signin|link)(?:@\S+)?\s+([0-9A-Za-z][0-9A-Za-z\s-]{0,20})\s*$/i;
const CANONICAL = new RegExp(`^[${CROCKFORD_ALPHABET}]{${CODE_LENGTH}}$`);

/**
 * The code a message carries when it is `/signin CODE` or `/link CODE` (any case, the code typed
 * as the user likes: `abcd efgh`, `ABCD-EFGH`), in canonical form; undefined for anything else.
 */
export const codeCommandOf = (text: string): { purpose: CodePurpose; code: string } | undefined => {
  if (text.length > 64) return undefined;
  const match = CODE_COMMAND.exec(text);
  if (!match) return undefined;
  const code = normaliseCrockford(match[2]!);
  return CANONICAL.test(code) ? { purpose: COMMANDS[match[1]!.toLowerCase()]!, code } : undefined;
};
