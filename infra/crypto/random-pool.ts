import { randomFillSync } from 'node:crypto';

/*
 * Random bytes for hot paths, drawn from a pool refilled 4 KiB at a time: one system call per
 * pool instead of one per id, key or nonce (a call per 16 bytes was 12 % of the API thread in
 * sends of 50 messages). A new pool is a new buffer, so bytes handed out are never overwritten.
 */
const POOL_BYTES = 4096;
let pool = Buffer.alloc(0);
let used = POOL_BYTES;

/** `length` (at most 4096) cryptographically random bytes. */
export const pooledRandomBytes = (length: number): Buffer => {
  if (used + length > pool.length) {
    pool = randomFillSync(Buffer.allocUnsafe(POOL_BYTES));
    used = 0;
  }
  used += length;
  return pool.subarray(used - length, used);
};
