// Entry of the delivery pipeline's worker thread. The sources are TypeScript, loaded through tsx
// (as bin/relay.js does for the main thread: loader hooks are registered per thread).
import { register } from 'tsx/esm/api';

register();
await import('./thread-main.ts');
