import { createHash, randomBytes } from 'node:crypto';

/** API keys: `rly_` + 32 random bytes in base64url. Looked up by SHA-256, never stored in clear. */
export const KEY_PREFIX = 'rly_';

export const generateApiKey = () => `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;

export const hashKey = (key: string) => createHash('sha256').update(key, 'utf8').digest('hex');

/** What may be shown of a key without revealing it. */
export const keyPreview = (key: string) => `${key.slice(0, KEY_PREFIX.length + 4)}…`;
