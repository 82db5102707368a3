import { v7 } from 'uuid';
import { pooledRandomBytes } from '../crypto/random-pool.ts';

/*
 * UUIDv7 (RFC 9562) through the uuid package, with the two things a hot path needs that its
 * option-less call does not give together:
 * - random bytes from a pool (../crypto/random-pool.ts): the package asks the Web Crypto API for
 *   16 bytes per id, which was 12 % of the API thread's time in sends of 50 messages;
 * - ids of this thread strictly increasing: 48 bits of milliseconds, then a 31-bit counter that
 *   starts at a random value each millisecond and counts up within it (the package's own rule,
 *   which it applies only when called without options).
 */
let lastMs = -Infinity;
let seq = 0;

export const uuidV7 = (): string => {
  const random = pooledRandomBytes(16);
  const now = Date.now();
  if (now > lastMs) {
    lastMs = now;
    seq = ((random[6]! & 0x7f) << 24) | (random[7]! << 16) | (random[8]! << 8) | random[9]!;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) lastMs++; // the counter wrapped: borrow the next millisecond
  }
  return v7({ msecs: lastMs, seq, random });
};
