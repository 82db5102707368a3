/**
 * The test client's keys and the 1:1 "session protocol" crypto, with node:crypto (Ed25519,
 * X25519, SHA-512) and, from sodium-native, only crypto_box (XSalsa20-Poly1305) and BLAKE2b for the
 * sealed box's nonce.
 *
 * Layout (libsession-util `src/session_encrypt.cpp` `sign_for_recipient` / `encrypt_for_recipient`
 * / `decrypt_incoming`; Desktop v1.17.2 `ts/session/crypto/MessageEncrypter.ts`
 * `encryptUsingSessionProtocol`):
 *   signature = Ed25519(sender) over  M ‖ A ‖ Y     (M the padded Content, A the sender's Ed25519
 *                                                    public key, Y the recipient's X25519 key)
 *   ciphertext = crypto_box_seal(M ‖ A ‖ signature, Y)
 * and crypto_box_seal = ephemeral X25519 key E ‖ crypto_box(…, nonce = BLAKE2b-192(E ‖ Y)).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import sodiumNative from 'sodium-native';

const sodium = sodiumNative as unknown as {
  crypto_box_easy(c: Buffer, m: Buffer, n: Buffer, pk: Buffer, sk: Buffer): void;
  crypto_box_open_easy(m: Buffer, c: Buffer, n: Buffer, pk: Buffer, sk: Buffer): boolean;
  crypto_generichash(out: Buffer, input: Buffer): void;
};

const ED_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
const X_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const ED_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

/** crypto_box_SEALBYTES: the ephemeral public key and the Poly1305 tag. */
export const SEAL_OVERHEAD = 48;

export interface Identity {
  readonly edPrivate: KeyObject;
  readonly edPublic: Buffer;
  readonly xSecret: Buffer;
  readonly xPublic: Buffer;
  readonly sessionId: string;
}

/**
 * Session keys from a 16-byte seed (Desktop `ts/util/accountManager.ts`): the seed padded with 16
 * zero bytes is the Ed25519 seed; the X25519 secret is clamp(SHA-512(seed)[0..32]) (what
 * crypto_sign_ed25519_sk_to_curve25519 computes); the Session ID is "05" ‖ hex(X25519 public key).
 */
export function identityFromSeed(seedHex: string): Identity {
  const seed32 = Buffer.concat([Buffer.from(seedHex, 'hex'), Buffer.alloc(16)]);
  const edPrivate = createPrivateKey({ key: Buffer.concat([ED_PKCS8, seed32]), format: 'der', type: 'pkcs8' });
  const edPublic = spkiTail(createPublicKey(edPrivate));
  const scalar = createHash('sha512').update(seed32).digest().subarray(0, 32);
  scalar[0]! &= 248;
  scalar[31]! &= 127;
  scalar[31]! |= 64;
  const xSecret = Buffer.from(scalar);
  const xPublic = spkiTail(createPublicKey(createPrivateKey({ key: Buffer.concat([X_PKCS8, xSecret]), format: 'der', type: 'pkcs8' })));
  return { edPrivate, edPublic, xSecret, xPublic, sessionId: `05${xPublic.toString('hex')}` };
}

function spkiTail(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'der', type: 'spki' })).subarray(-32);
}

export const edSign = (message: Buffer, key: KeyObject): Buffer => sign(null, message, key);

export function edVerify(message: Buffer, publicKey: Buffer, signature: Buffer): boolean {
  const key = createPublicKey({ key: Buffer.concat([ED_SPKI, publicKey]), format: 'der', type: 'spki' });
  return verify(null, message, key, signature);
}

function boxNonce(ephemeralPublic: Buffer, recipientPublic: Buffer): Buffer {
  const nonce = Buffer.alloc(24);
  sodium.crypto_generichash(nonce, Buffer.concat([ephemeralPublic, recipientPublic]));
  return nonce;
}

export function sealTo(recipientX: Buffer, message: Buffer): Buffer {
  const { privateKey } = generateKeyPairSync('x25519');
  const ephemeralPublic = spkiTail(createPublicKey(privateKey));
  const ephemeralSecret = Buffer.from(privateKey.export({ format: 'der', type: 'pkcs8' })).subarray(-32);
  const box = Buffer.alloc(message.length + 16);
  sodium.crypto_box_easy(box, message, boxNonce(ephemeralPublic, recipientX), recipientX, ephemeralSecret);
  return Buffer.concat([ephemeralPublic, box]);
}

export function openSealed(sealed: Buffer, ownPublic: Buffer, ownSecret: Buffer): Buffer | undefined {
  if (sealed.length < SEAL_OVERHEAD) return undefined;
  const ephemeralPublic = sealed.subarray(0, 32);
  const box = sealed.subarray(32);
  const message = Buffer.alloc(box.length - 16);
  return sodium.crypto_box_open_easy(message, box, boxNonce(ephemeralPublic, ownPublic), ephemeralPublic, ownSecret) ? message : undefined;
}

/** The session-protocol ciphertext of the (already padded) plaintext M for recipient Y. */
export function encryptForRecipient(sender: Identity, recipientX: Buffer, padded: Buffer): Buffer {
  const signature = edSign(Buffer.concat([padded, sender.edPublic, recipientX]), sender.edPrivate);
  return sealTo(recipientX, Buffer.concat([padded, sender.edPublic, signature]));
}

export type Decrypted = { readonly padded: Buffer; readonly senderEd: Buffer } | { readonly error: string };

/**
 * libsession `decrypt_incoming`: at least 48 + 32 + 64 bytes, opens, splits M ‖ A ‖ signature and
 * checks the signature over M ‖ A ‖ own X25519 key.
 */
export function decryptIncoming(ciphertext: Buffer, own: Identity): Decrypted {
  if (ciphertext.length < SEAL_OVERHEAD + 32 + 64) return { error: 'ciphertext is too small' };
  const inner = openSealed(ciphertext, own.xPublic, own.xSecret);
  if (!inner) return { error: 'does not open' };
  const padded = inner.subarray(0, inner.length - 96);
  const senderEd = inner.subarray(inner.length - 96, inner.length - 64);
  const signature = inner.subarray(inner.length - 64);
  if (!edVerify(Buffer.concat([padded, senderEd, own.xPublic]), senderEd, signature)) return { error: 'bad signature' };
  return { padded: Buffer.from(padded), senderEd: Buffer.from(senderEd) };
}

/**
 * The Envelope.proSig of a sender without Session Pro: libsession-util `src/session_protocol.cpp`
 * (@996650b7, `encode_for_destination_internal`) signs the envelope's content with a throw-away
 * Ed25519 key, "valid but unverifiable", so that Pro and non-Pro messages look alike. (A later
 * revision, @015af4a7, writes a decoy R ‖ s instead; both are 64 bytes no receiver verifies.)
 */
export function throwawayProSig(envelopeContent: Buffer): Buffer {
  const { privateKey } = generateKeyPairSync('ed25519');
  return edSign(envelopeContent, privateKey);
}

/** Edwards y → Montgomery u = (1 + y) / (1 − y) mod 2²⁵⁵ − 19 (crypto_sign_ed25519_pk_to_curve25519). */
export function edToMontgomery(edPublic: Buffer): Buffer {
  const p = (1n << 255n) - 19n;
  const bytes = Buffer.from(edPublic);
  bytes[31]! &= 0x7f;
  const y = BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`);
  const modPow = (base: bigint, exp: bigint): bigint => {
    let result = 1n;
    let b = base % p;
    let e = exp;
    while (e > 0n) {
      if (e & 1n) result = (result * b) % p;
      b = (b * b) % p;
      e >>= 1n;
    }
    return result;
  };
  const u = ((1n + y) * modPow((1n - y + p) % p, p - 2n)) % p;
  return Buffer.from(u.toString(16).padStart(64, '0'), 'hex').reverse();
}
