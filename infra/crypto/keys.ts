import { hash, randomBytes } from 'node:crypto';

/** API keys: `rly_` + 32 random bytes in base64url. Looked up by SHA-256, never stored in clear. */
export const KEY_PREFIX = 'rly_';

export const generateApiKey = () => `${KEY_PREFIX}${randomBytes(32).toString('base64url')}`;

/** One-shot SHA-256 (a third of the cost of a Hash object per request on every authenticated call: issue 28, item 5). */
export const hashKey = (key: string) => hash('sha256', key, 'hex');

/** What may be shown of a key without revealing it. */
export const keyPreview = (key: string) => `${key.slice(0, KEY_PREFIX.length + 4)}…`;
