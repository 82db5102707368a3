/**
 * Whether this process runs Relay's JavaScript build (dist/, scripts/build.mjs) or its TypeScript
 * sources through tsx (see bin/relay.js): a module of the sources has a `.ts` URL, one of the
 * build a `.js` chunk's.
 */
export const RUNNING_FROM: 'sources' | 'build' = import.meta.url.endsWith('.ts') ? 'sources' : 'build';
