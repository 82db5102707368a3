import sodiumNative from 'sodium-native';

const sodium = sodiumNative as unknown as {
  crypto_sign_keypair(pk: Buffer, sk: Buffer): void;
  crypto_sign_ed25519_pk_to_curve25519(x: Buffer, ed: Buffer): void;
  crypto_sign_ed25519_sk_to_curve25519(x: Buffer, ed: Buffer): void;
};

/** A storage server's keys, for tests: a new Ed25519 pair and the X25519 pair derived from it, as the servers derive theirs. */
export const snodeKeys = (): { edPublic: Buffer; edSecret: Buffer; xPublic: Buffer; xSecret: Buffer } => {
  const edPublic = Buffer.alloc(32);
  const edSecret = Buffer.alloc(64);
  sodium.crypto_sign_keypair(edPublic, edSecret);
  const xPublic = Buffer.alloc(32);
  const xSecret = Buffer.alloc(32);
  sodium.crypto_sign_ed25519_pk_to_curve25519(xPublic, edPublic);
  sodium.crypto_sign_ed25519_sk_to_curve25519(xSecret, edSecret);
  return { edPublic, edSecret, xPublic, xSecret };
};
