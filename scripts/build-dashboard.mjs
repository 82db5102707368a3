// The web dashboard's browser code: dashboard/src (Preact, TypeScript) bundled by esbuild into
// dashboard/dist/app.js and app.css, which Relay serves under /dashboard/assets. Nothing is
// fetched at run time: no CDN, every byte is in the bundle.
import { build } from 'esbuild';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

export const buildDashboard = async ({ logLevel = 'warning' } = {}) => {
  const out = path.join(root, 'dashboard/dist');
  await build({
    absWorkingDir: root,
    entryPoints: { app: 'dashboard/src/main.tsx' },
    outdir: out,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome110', 'firefox115', 'safari16'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    minify: true,
    sourcemap: 'linked',
    loader: { '.css': 'css' },
    logLevel,
  });
};

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await buildDashboard();
