import { readFileSync } from 'node:fs';

/** The package's semver, reported by health. */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
