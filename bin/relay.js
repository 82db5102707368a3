#!/usr/bin/env node
// Relay's command line. The sources are TypeScript, loaded through tsx.
import { register } from 'tsx/esm/api';

register();
await import('../apps/cli/main.ts');
