import { createCipheriv, createDecipheriv } from 'node:crypto';
import { uuidV7 } from '../ids/uuid-v7.ts';
import { pooledRandomBytes } from './random-pool.ts';
import type { SecretBox } from './secret-box.ts';
import { decodeStringList, encodeStringList } from './string-list.ts';

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

/** Formats of a sealed payload, named by its prefix: the same envelope around JSON (s1) or a string list (s2). */
const JSON_FORMAT = 's1';
const STRINGS_FORMAT = 's2';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** What a sealed payload held. */
export type OpenedPayload = { readonly format: 'json'; readonly value: unknown } | { readonly format: 'strings'; readonly strings: (string | null)[] };

export interface MessageSealer {
  newKey(): DataKey;
  /** The key material of a wrapped key (throws SealedPayloadError when it is not one of ours). */
  unwrap(wrapped: string): Buffer;
  /** `s1:` + base64url(iv ‖ tag ‖ ciphertext) of the JSON of `payload`. */
  seal(key: Buffer, boundTo: string, payload: unknown): string;
  /** `s2:` + base64url(iv ‖ tag ‖ ciphertext) of `strings` as a string list (string-list.ts): cheaper than JSON for many strings. */
  sealStrings(key: Buffer, boundTo: string, strings: readonly (string | null)[]): string;
  /** What `seal` or `sealStrings` sealed (throws SealedPayloadError when it does not open). */
  open(key: Buffer, boundTo: string, sealed: string): OpenedPayload;
}

/** The additional data: what the payload is bound to, and (since s2) its format, so a payload does not open as another format. */
const additionalData = (format: string, boundTo: string): Buffer => Buffer.from(format === JSON_FORMAT ? boundTo : `${format}/${boundTo}`, 'utf8');

const encrypt = (format: string, key: Buffer, boundTo: string, plaintext: string): string => {
  const iv = pooledRandomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(additionalData(format, boundTo));
  const body = cipher.update(plaintext, 'utf8');
  const tail = cipher.final(); // empty for GCM
  return `${format}:${Buffer.concat([iv, cipher.getAuthTag(), body, tail]).toString('base64url')}`;
};

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

  seal: (key, boundTo, payload) => encrypt(JSON_FORMAT, key, boundTo, JSON.stringify(payload)),

  sealStrings: (key, boundTo, strings) => encrypt(STRINGS_FORMAT, key, boundTo, encodeStringList(strings)),

  open(key, boundTo, sealed) {
    const format = sealed.slice(0, sealed.indexOf(':'));
    if (format !== JSON_FORMAT && format !== STRINGS_FORMAT) throw new SealedPayloadError('Unknown sealed payload format');
    const bytes = Buffer.from(sealed.slice(format.length + 1), 'base64url');
    if (bytes.length < IV_BYTES + TAG_BYTES) throw new SealedPayloadError('A sealed payload is too short');
    let plain: Buffer;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(additionalData(format, boundTo));
      decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      plain = Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
    } catch (error) {
      throw new SealedPayloadError('A sealed payload does not open with its key', { cause: error });
    }
    try {
      return format === JSON_FORMAT ? { format: 'json', value: JSON.parse(plain.toString('utf8')) as unknown } : { format: 'strings', strings: decodeStringList(plain.toString('utf8')) };
    } catch (error) {
      throw new SealedPayloadError('A sealed payload opened but is not in its format', { cause: error });
    }
  },
});

/** The JSON value of a payload sealed by `seal` (SealedPayloadError for another format). */
export const jsonOf = <T>(opened: OpenedPayload): T => {
  if (opened.format !== 'json') throw new SealedPayloadError('A sealed payload is not JSON');
  return opened.value as T;
};
