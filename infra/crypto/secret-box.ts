import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * Encrypts secrets at rest (credential keys, webhook secrets) with AES-256-GCM.
 * Format: `v1:<iv b64url>:<tag b64url>:<ciphertext b64url>`.
 */
export interface SecretBox {
  encrypt(plain: string): string;
  decrypt(sealed: string): string;
}

export const createSecretBox = (keyHex: string): SecretBox => {
  const key = Buffer.from(keyHex, 'hex');
  if (key.length !== 32) throw new Error('The secret key must be 32 bytes');
  return {
    encrypt(plain) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', key, iv);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join(':');
    },
    decrypt(sealed) {
      const [version, iv, tag, body] = sealed.split(':');
      if (version !== 'v1' || !iv || !tag || body === undefined) throw new Error('Unknown sealed secret format');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
};
