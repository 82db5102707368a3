import { randomBytes, randomUUID } from 'node:crypto';
import { uuidV7, uuidV7Hex } from './uuid-v7.ts';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');

/**
 * Ids of things created often (batches, messages) are time-ordered (UUIDv7: 48 bits of
 * milliseconds, then a counter and random bits), so that the indexes and stream names keyed by
 * them grow at their end instead of touching a random page per insert: on SQLite this made an
 * append about three times cheaper. Ids of rarer things stay fully random.
 */
export const newId = {
  user: () => `usr_${hex(12)}`,
  app: () => `app_${hex(12)}`,
  appMessenger: () => `am_${hex(12)}`,
  credential: () => `cred_${hex(12)}`,
  batch: () => uuidV7(),
  session: () => randomUUID(),
  groupRequest: () => `grq_${hex(12)}`,
  signalLink: () => `sgl_${hex(12)}`,
  invoice: () => `inv_${hex(12)}`,
  /** 24 hex characters: a sign-in link is `<signInId>.<secret>`. */
  signIn: () => hex(12),
  /** 32-character hex, the interface's message id format (a UUIDv7 without its dashes). */
  message: uuidV7Hex,
};
