// The part of sodium-native (libsodium's Node binding; it ships no types) that Relay uses.
declare module 'sodium-native' {
  const sodium: {
    readonly crypto_aead_xchacha20poly1305_ietf_KEYBYTES: number;
    readonly crypto_aead_xchacha20poly1305_ietf_NPUBBYTES: number;
    readonly crypto_aead_xchacha20poly1305_ietf_ABYTES: number;
    /** Writes ciphertext ‖ tag into `c` (m.byteLength + ABYTES bytes); returns its length. */
    crypto_aead_xchacha20poly1305_ietf_encrypt(c: Uint8Array, m: Uint8Array, ad: Uint8Array | null, nsec: null, npub: Uint8Array, k: Uint8Array): number;
    /** Writes the plaintext into `m` (c.byteLength - ABYTES bytes); throws when the tag does not verify. */
    crypto_aead_xchacha20poly1305_ietf_decrypt(m: Uint8Array, nsec: null, c: Uint8Array, ad: Uint8Array | null, npub: Uint8Array, k: Uint8Array): number;
    // The Session client's (infra/messenger/session): libsodium's own signatures, output buffers first.
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
  };
  export default sodium;
}
