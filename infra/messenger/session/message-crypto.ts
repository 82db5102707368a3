import { sessionIdOfEdKey, type SessionIdentity } from './identity.ts';
import sodium from 'sodium-native';

/**
 * Session's one-to-one encryption (docs: ../shared/notes/session-protocol.md §5):
 *   padded = plaintext ‖ 0x80 ‖ 0x00… up to a multiple of 160 bytes, less one
 *   sig    = Ed25519(sender) over padded ‖ sender Ed25519 key ‖ recipient X25519 key
 *   box    = crypto_box_seal(padded ‖ sender Ed25519 key ‖ sig, recipient X25519 key)
 */
export class SessionCryptoError extends Error {
  override readonly name = 'SessionCryptoError';
}

const PAD_BLOCK = 160;
const ED_KEY_BYTES = 32;
const SIGNATURE_BYTES = 64;

export function padMessage(plaintext: Uint8Array): Buffer {
  const length = Math.ceil((plaintext.byteLength + 2) / PAD_BLOCK) * PAD_BLOCK - 1;
  const padded = Buffer.alloc(length);
  padded.set(plaintext);
  padded[plaintext.byteLength] = 0x80;
  return padded;
}

/**
 * The plaintext before its padding, read as every receiver reads it (session-desktop
 * `BufferPadding.ts` removeMessagePadding; libsession pads to whole 160-byte blocks, old Desktop to
 * 160n − 1): trailing zero bytes, then the 0x80 marker, are cut; content that ends in any other
 * byte was sent without padding and is taken whole.
 */
export function unpadMessage(padded: Uint8Array): Buffer {
  let end = padded.byteLength - 1;
  while (end >= 0 && padded[end] === 0) end--;
  if (end < 0) throw new SessionCryptoError('the message is empty');
  if (padded[end] !== 0x80) return Buffer.from(padded);
  return Buffer.from(padded.subarray(0, end));
}

export function sealForRecipient(sender: SessionIdentity, recipientXPublicKey: Uint8Array, padded: Uint8Array): Buffer {
  if (recipientXPublicKey.byteLength !== 32) throw new SessionCryptoError('a recipient key is 32 bytes');
  const signature = Buffer.alloc(SIGNATURE_BYTES);
  sodium.crypto_sign_detached(signature, Buffer.concat([padded, sender.edPublicKey, recipientXPublicKey]), sender.edSecretKey);
  const inner = Buffer.concat([padded, sender.edPublicKey, signature]);
  const sealed = Buffer.alloc(inner.byteLength + sodium.crypto_box_SEALBYTES);
  sodium.crypto_box_seal(sealed, inner, recipientXPublicKey);
  return sealed;
}

export interface OpenedMessage {
  /** Still padded. */
  readonly padded: Buffer;
  readonly senderEdPublicKey: Buffer;
  readonly senderSessionId: string;
  /** The sender's Ed25519 signature over padded ‖ sender key ‖ recipient key. */
  readonly signature: Buffer;
}

/** Opens a sealed box addressed to `own` and checks the sender's signature; throws when either fails. */
export function openSealed(own: SessionIdentity, sealed: Uint8Array): OpenedMessage {
  if (sealed.byteLength <= sodium.crypto_box_SEALBYTES + ED_KEY_BYTES + SIGNATURE_BYTES) throw new SessionCryptoError('the ciphertext is too short');
  const inner = Buffer.alloc(sealed.byteLength - sodium.crypto_box_SEALBYTES);
  if (!sodium.crypto_box_seal_open(inner, sealed, own.xPublicKey, own.xSecretKey)) throw new SessionCryptoError('the message does not open with this identity');
  const padded = inner.subarray(0, inner.byteLength - ED_KEY_BYTES - SIGNATURE_BYTES);
  const senderEdPublicKey = inner.subarray(padded.byteLength, padded.byteLength + ED_KEY_BYTES);
  const signature = inner.subarray(padded.byteLength + ED_KEY_BYTES);
  const signed = Buffer.concat([padded, senderEdPublicKey, own.xPublicKey]);
  if (!sodium.crypto_sign_verify_detached(signature, signed, senderEdPublicKey)) throw new SessionCryptoError('the sender signature does not verify');
  let senderSessionId: string;
  try {
    senderSessionId = sessionIdOfEdKey(senderEdPublicKey);
  } catch {
    throw new SessionCryptoError('the sender key is not a valid Ed25519 key');
  }
  return { padded: Buffer.from(padded), senderEdPublicKey: Buffer.from(senderEdPublicKey), senderSessionId, signature: Buffer.from(signature) };
}

/**
 * The storage server's id of a stored message: unpadded base64 of BLAKE2b-256 over the network id
 * byte (0x05), the 32-byte key, the namespace in decimal unless it is 0, and the data.
 */
export function messageHash(sessionId: string, namespace: number, data: Uint8Array): string {
  const key = Buffer.from(sessionId, 'hex');
  const parts = [key, namespace === 0 ? Buffer.alloc(0) : Buffer.from(String(namespace)), data];
  const hash = Buffer.alloc(32);
  sodium.crypto_generichash_batch(hash, parts);
  return hash.toString('base64').replace(/=+$/, '');
}
