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
  };
  export default sodium;
}
