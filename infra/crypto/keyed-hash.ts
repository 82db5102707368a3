import { createHmac, hkdfSync } from 'node:crypto';

/** What a keyed hash identifies: each purpose has a key of its own, so a ref of one kind says nothing of another. */
export type KeyedHashPurpose = 'messenger-code' | 'messenger-contact' | 'secret-key-check' | 'rate-limit';

/**
 * HMAC-SHA-256 under a key derived (HKDF) from the operator's secret key, one key per purpose:
 * a stable reference to a value that must be found again (a contact that signs in, a code that
 * is sent) without writing the value down. Without RELAY_SECRET_KEY a reference tells nothing;
 * with it, a guessed value can be checked against one (docs/privacy.md).
 */
export interface KeyedHash {
  /** 32 hex characters (128 bits). */
  ref(purpose: KeyedHashPurpose, value: string): string;
}

export const createKeyedHash = (secretKeyHex: string): KeyedHash => {
  const secret = Buffer.from(secretKeyHex, 'hex');
  const keys = new Map<KeyedHashPurpose, Buffer>();
  const keyOf = (purpose: KeyedHashPurpose) => {
    let key = keys.get(purpose);
    if (!key) keys.set(purpose, (key = Buffer.from(hkdfSync('sha256', secret, Buffer.alloc(0), `relay/keyed-hash/${purpose}`, 32))));
    return key;
  };
  return { ref: (purpose, value) => createHmac('sha256', keyOf(purpose)).update(value, 'utf8').digest('hex').slice(0, 32) };
};
