import { randomInt } from 'node:crypto';
import { CROCKFORD_ALPHABET } from '../../domain/shared/crockford.ts';

/** `length` characters of Crockford's base32 from the system's CSPRNG (5 bits each). */
export const randomCrockford = (length: number): string => Array.from({ length }, () => CROCKFORD_ALPHABET[randomInt(CROCKFORD_ALPHABET.length)]).join('');
