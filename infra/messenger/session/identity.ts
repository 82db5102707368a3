import sodium from 'sodium-native';

/**
 * A Session identity: a 16-byte seed, padded with 16 zero bytes into an Ed25519 seed; the X25519
 * key pair is the Ed25519 one converted (libsodium's ed25519→curve25519), and the Session ID is
 * "05" followed by the X25519 public key in hex (66 characters).
 *
 * The seed is the whole secret: whoever has it is the bot. Keep it sealed, never log it.
 */
export interface SessionIdentity {
  readonly sessionId: string;
  readonly seed: Buffer;
  readonly edPublicKey: Buffer;
  /** libsodium's 64-byte Ed25519 secret key (seed ‖ public key). */
  readonly edSecretKey: Buffer;
  readonly xPublicKey: Buffer;
  readonly xSecretKey: Buffer;
}

export const SEED_BYTES = 16;
export const SESSION_ID_PREFIX = '05';
const SESSION_ID = /^05[0-9a-f]{64}$/;

export class SessionIdError extends Error {
  override readonly name = 'SessionIdError';
}

export function newSeed(): Buffer {
  const seed = Buffer.alloc(SEED_BYTES);
  sodium.randombytes_buf(seed);
  return seed;
}

export function identityFromSeed(seed: Uint8Array): SessionIdentity {
  if (seed.byteLength !== SEED_BYTES) throw new SessionIdError(`a Session seed is ${SEED_BYTES} bytes, not ${seed.byteLength}`);
  const edSeed = Buffer.alloc(32);
  edSeed.set(seed);
  const edPublicKey = Buffer.alloc(sodium.crypto_sign_PUBLICKEYBYTES);
  const edSecretKey = Buffer.alloc(sodium.crypto_sign_SECRETKEYBYTES);
  sodium.crypto_sign_seed_keypair(edPublicKey, edSecretKey, edSeed);
  sodium.sodium_memzero(edSeed);
  const xPublicKey = Buffer.alloc(32);
  const xSecretKey = Buffer.alloc(32);
  sodium.crypto_sign_ed25519_pk_to_curve25519(xPublicKey, edPublicKey);
  sodium.crypto_sign_ed25519_sk_to_curve25519(xSecretKey, edSecretKey);
  return {
    sessionId: SESSION_ID_PREFIX + xPublicKey.toString('hex'),
    seed: Buffer.from(seed),
    edPublicKey,
    edSecretKey,
    xPublicKey,
    xSecretKey,
  };
}

/** A seed written as 32 hex characters, the form an operator may configure. */
export function seedFromHex(hex: string): Buffer {
  if (!/^[0-9a-fA-F]{32}$/.test(hex)) throw new SessionIdError('a Session seed is 32 hex characters');
  return Buffer.from(hex, 'hex');
}

export function isSessionId(value: string): boolean {
  return SESSION_ID.test(value);
}

/** The X25519 public key a Session ID names (the 32 bytes after "05"). */
export function sessionIdPublicKey(sessionId: string): Buffer {
  if (!isSessionId(sessionId)) throw new SessionIdError('a Session ID is 66 lowercase hex characters starting with 05');
  return Buffer.from(sessionId.slice(2), 'hex');
}

/** The Session ID whose owner signs with this Ed25519 key. Throws when the key is no curve point. */
export function sessionIdOfEdKey(edPublicKey: Uint8Array): string {
  const x = Buffer.alloc(32);
  sodium.crypto_sign_ed25519_pk_to_curve25519(x, edPublicKey);
  return SESSION_ID_PREFIX + x.toString('hex');
}
