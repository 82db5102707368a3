import { createDecipheriv } from 'node:crypto';
import sodium from 'sodium-native';
import { uuidV7 } from '../ids/uuid-v7.ts';
import { pooledRandomBytes } from './random-pool.ts';
import type { SecretBox } from './secret-box.ts';
import { decodeStringList, encodeStringList } from './string-list.ts';

/**
 * Sealing of message bodies and contact ids with data keys (crypto-shredding, docs/privacy.md).
 *
 * A data key is 32 random bytes; what leaves memory is only its wrapped form (encrypted with the
 * operator's secret key, RELAY_SECRET_KEY), kept by the key vault beside the event history. A
 * sealed payload is bound to what it belongs to (the additional data names the stream, and the
 * format), so a payload copied to another message does not open. Destroying the data key in the
 * vault leaves the sealed payload in the history unreadable by anyone.
 *
 * Formats, named by the payload's prefix (`<format>:` + base64url of the bytes):
 * - `s2` (written now): XChaCha20-Poly1305 (libsodium, through sodium-native) of a list of strings
 *   (string-list.ts); bytes are nonce (24, random) ‖ ciphertext ‖ tag (16). One libsodium call:
 *   about 1 µs for a message, where a Node cipher object cost 4 to 7 µs to set up.
 * - `s1` (written by Relay 0.1 before it, still opened): AES-256-GCM of JSON; bytes are IV (12) ‖
 *   tag (16) ‖ ciphertext; the additional data is the binding alone.
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

const STRINGS_FORMAT = 's2';
const LEGACY_JSON_FORMAT = 's1';
const NONCE_BYTES = sodium.crypto_aead_xchacha20poly1305_ietf_NPUBBYTES;
const TAG_BYTES = sodium.crypto_aead_xchacha20poly1305_ietf_ABYTES;
const GCM_IV_BYTES = 12;
const GCM_TAG_BYTES = 16;

/** What a sealed payload held: the strings of an `s2` payload, or the JSON value of an `s1` one. */
export type OpenedPayload = { readonly format: 'strings'; readonly strings: (string | null)[] } | { readonly format: 'json'; readonly value: unknown };

export interface MessageSealer {
  newKey(): DataKey;
  /** The key material of a wrapped key (throws SealedPayloadError when it is not one of ours). */
  unwrap(wrapped: string): Buffer;
  /** `s2:` + base64url(nonce ‖ ciphertext ‖ tag) of `strings`, bound to `boundTo`. */
  seal(key: Buffer, boundTo: string, strings: readonly (string | null)[]): string;
  /** What a payload sealed now (`s2`) or before (`s1`) held (throws SealedPayloadError when it does not open). */
  open(key: Buffer, boundTo: string, sealed: string): OpenedPayload;
}

/** The additional data of an `s2` payload: its format and what it is bound to. */
const additionalData = (boundTo: string): Buffer => Buffer.from(`${STRINGS_FORMAT}/${boundTo}`, 'utf8');

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

  seal(key, boundTo, strings) {
    const plain = Buffer.from(encodeStringList(strings), 'utf8');
    const bytes = Buffer.allocUnsafe(NONCE_BYTES + plain.length + TAG_BYTES);
    const nonce = bytes.subarray(0, NONCE_BYTES);
    pooledRandomBytes(NONCE_BYTES).copy(nonce);
    sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(bytes.subarray(NONCE_BYTES), plain, additionalData(boundTo), null, nonce, key);
    return `${STRINGS_FORMAT}:${bytes.toString('base64url')}`;
  },

  open(key, boundTo, sealed) {
    const format = sealed.slice(0, sealed.indexOf(':'));
    const bytes = Buffer.from(sealed.slice(format.length + 1), 'base64url');
    if (format === STRINGS_FORMAT) {
      if (bytes.length < NONCE_BYTES + TAG_BYTES) throw new SealedPayloadError('A sealed payload is too short');
      const plain = Buffer.allocUnsafe(bytes.length - NONCE_BYTES - TAG_BYTES);
      try {
        sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(plain, null, bytes.subarray(NONCE_BYTES), additionalData(boundTo), bytes.subarray(0, NONCE_BYTES), key);
      } catch (error) {
        throw new SealedPayloadError('A sealed payload does not open with its key', { cause: error });
      }
      try {
        return { format: 'strings', strings: decodeStringList(plain.toString('utf8')) };
      } catch (error) {
        throw new SealedPayloadError('A sealed payload opened but is not a string list', { cause: error });
      }
    }
    if (format === LEGACY_JSON_FORMAT) return { format: 'json', value: openLegacyJson(key, boundTo, bytes) };
    throw new SealedPayloadError('Unknown sealed payload format');
  },
});

/** An `s1` payload: AES-256-GCM of JSON, the binding as additional data. */
const openLegacyJson = (key: Buffer, boundTo: string, bytes: Buffer): unknown => {
  if (bytes.length < GCM_IV_BYTES + GCM_TAG_BYTES) throw new SealedPayloadError('A sealed payload is too short');
  let plain: Buffer;
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, GCM_IV_BYTES));
    decipher.setAAD(Buffer.from(boundTo, 'utf8'));
    decipher.setAuthTag(bytes.subarray(GCM_IV_BYTES, GCM_IV_BYTES + GCM_TAG_BYTES));
    plain = Buffer.concat([decipher.update(bytes.subarray(GCM_IV_BYTES + GCM_TAG_BYTES)), decipher.final()]);
  } catch (error) {
    throw new SealedPayloadError('A sealed payload does not open with its key', { cause: error });
  }
  try {
    return JSON.parse(plain.toString('utf8')) as unknown;
  } catch (error) {
    throw new SealedPayloadError('A sealed payload opened but is not JSON', { cause: error });
  }
};
