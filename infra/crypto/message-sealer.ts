import { createCipheriv, createDecipheriv } from 'node:crypto';
import { uuidV7 } from '../ids/uuid-v7.ts';
import { pooledRandomBytes } from './random-pool.ts';
import type { SecretBox } from './secret-box.ts';

/**
 * Sealing of message bodies and contact ids with data keys (crypto-shredding, docs/privacy.md).
 *
 * A data key is 32 random bytes; what leaves memory is only its wrapped form (encrypted with the
 * operator's secret key, RELAY_SECRET_KEY), kept by the key vault beside the event history. A
 * sealed payload is AES-256-GCM under the data key, bound to what it belongs to (the additional
 * data names the stream), so a payload copied to another message does not open. Destroying the
 * data key in the vault leaves the sealed payload in the history unreadable by anyone.
 */
export interface DataKey {
  readonly id: string;
  /** The key material: never written anywhere. */
  readonly raw: Buffer;
  /** What the vault keeps. */
  readonly wrapped: string;
}

export class SealedPayloadError extends Error {
  override readonly name = 'SealedPayloadError';
}

const VERSION = 's1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export interface MessageSealer {
  newKey(): DataKey;
  /** The key material of a wrapped key (throws SealedPayloadError when it is not one of ours). */
  unwrap(wrapped: string): Buffer;
  /** `s1:` + base64url(iv ‖ tag ‖ ciphertext) of the JSON of `payload`. */
  seal(key: Buffer, boundTo: string, payload: unknown): string;
  open<T>(key: Buffer, boundTo: string, sealed: string): T;
}

export const createMessageSealer = (secretKey: SecretBox): MessageSealer => ({
  newKey() {
    const raw = Buffer.from(pooledRandomBytes(32));
    return { id: uuidV7(), raw, wrapped: secretKey.encrypt(raw.toString('base64url')) };
  },

  unwrap(wrapped) {
    let raw: Buffer;
    try {
      raw = Buffer.from(secretKey.decrypt(wrapped), 'base64url');
    } catch (error) {
      throw new SealedPayloadError('A data key does not open with this RELAY_SECRET_KEY', { cause: error });
    }
    if (raw.length !== 32) throw new SealedPayloadError('A data key is not 32 bytes');
    return raw;
  },

  seal(key, boundTo, payload) {
    const iv = pooledRandomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(boundTo, 'utf8'));
    const body = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
    return `${VERSION}:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  },

  open<T>(key: Buffer, boundTo: string, sealed: string): T {
    if (!sealed.startsWith(`${VERSION}:`)) throw new SealedPayloadError('Unknown sealed payload format');
    const bytes = Buffer.from(sealed.slice(VERSION.length + 1), 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new SealedPayloadError('A sealed payload is too short');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(boundTo, 'utf8'));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      const plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
      return JSON.parse(plain.toString('utf8')) as T;
    } catch (error) {
      throw new SealedPayloadError('A sealed payload does not open with its key', { cause: error });
    }
  },
});
