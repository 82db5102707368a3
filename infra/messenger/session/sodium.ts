import sodiumNative from 'sodium-native';

/**
 * The libsodium calls the Session client makes, typed. sodium-native ships no types and Relay's
 * declaration (infra/crypto/sodium-native.d.ts) names only what the message sealer uses, so this
 * module gives the same binding the signatures of the calls below (libsodium's own, with output
 * buffers first).
 */
export interface SessionSodium {
  readonly crypto_sign_PUBLICKEYBYTES: number;
  readonly crypto_sign_SECRETKEYBYTES: number;
  readonly crypto_sign_BYTES: number;
  readonly crypto_box_SEALBYTES: number;
  crypto_sign_seed_keypair(pk: Uint8Array, sk: Uint8Array, seed: Uint8Array): void;
  crypto_sign_detached(sig: Uint8Array, m: Uint8Array, sk: Uint8Array): void;
  crypto_sign_verify_detached(sig: Uint8Array, m: Uint8Array, pk: Uint8Array): boolean;
  /** Throws when the Ed25519 key is not a valid point. */
  crypto_sign_ed25519_pk_to_curve25519(xPk: Uint8Array, edPk: Uint8Array): void;
  crypto_sign_ed25519_sk_to_curve25519(xSk: Uint8Array, edSk: Uint8Array): void;
  crypto_box_seal(c: Uint8Array, m: Uint8Array, pk: Uint8Array): void;
  /** False when the ciphertext does not open with this key pair. */
  crypto_box_seal_open(m: Uint8Array, c: Uint8Array, pk: Uint8Array, sk: Uint8Array): boolean;
  crypto_generichash(out: Uint8Array, input: Uint8Array, key?: Uint8Array): void;
  crypto_generichash_batch(out: Uint8Array, inputs: readonly Uint8Array[], key?: Uint8Array): void;
  randombytes_buf(buf: Uint8Array): void;
  sodium_memzero(buf: Uint8Array): void;
}

export const sodium = sodiumNative as unknown as SessionSodium;
