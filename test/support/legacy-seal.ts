import { createCipheriv, randomBytes } from 'node:crypto';

/**
 * A payload as Relay 0.1 sealed it before format s2 (`s1`: AES-256-GCM of JSON, the binding as
 * additional data; IV ‖ tag ‖ ciphertext): fixtures of histories written then, which Relay still
 * opens.
 */
export const sealLegacyJson = (key: Buffer, boundTo: string, payload: unknown): string => {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(boundTo, 'utf8'));
  const body = Buffer.concat([cipher.update(JSON.stringify(payload), 'utf8'), cipher.final()]);
  return `s1:${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
};
