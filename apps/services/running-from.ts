import { fileURLToPath } from 'node:url';
/**
 * Whether this process runs Relay's JavaScript build (dist/, scripts/build.mjs) or its TypeScript
 * sources through tsx (see bin/relay.js): a module of the sources has a `.ts` URL, one of the
 * build a `.js` chunk's.
 */
export const RUNNING_FROM: 'sources' | 'build' = import.meta.url.endsWith('.ts') ? 'sources' : 'build';

/** The project's root directory (where dashboard/dist is), from the sources' place or the build's. */
export const PROJECT_ROOT: string = fileURLToPath(new URL(RUNNING_FROM === 'sources' ? '../../' : '../', import.meta.url));
