#!/usr/bin/env node
// Relay's command line. It runs the JavaScript build in dist/ (`npm run build`; `npm start`,
// `npm test` and `npm run bench` make it first) when that build is at least as new as every
// source file, and the TypeScript sources through tsx otherwise: an edit is never shadowed by an
// old build, and a checkout without a build still runs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const SOURCE_DIRS = ['apps', 'domain', 'infra', 'projections'];

/** When the build in dist/ read its sources, if there is one. */
const buildTime = () => {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, 'dist/build.json'), 'utf8')).sourcesAsOf;
  } catch {
    return undefined;
  }
};

/** Whether a file that goes into the build changed after `time` (tests and their fixtures do not go in). */
const changedSince = (time) => {
  if (fs.statSync(path.join(root, 'package.json')).mtimeMs > time) return true;
  for (const dir of SOURCE_DIRS) {
    for (const entry of fs.readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })) {
      if (!entry.isFile() || entry.name.endsWith('.spec.ts') || !/\.(ts|js|mjs)$/.test(entry.name)) continue;
      const file = path.join(entry.parentPath ?? entry.path, entry.name);
      if (file.includes(`${path.sep}fixtures${path.sep}`)) continue;
      if (fs.statSync(file).mtimeMs > time) return true;
    }
  }
  return false;
};

/**
 * Started through npm, this process stops with the command the user started. npm passes SIGTERM
 * and SIGINT to its own child only: `npm start` execs this process, so it gets them, but under
 * `npx relay …` its child is a shell, which dies of them and leaves this process behind; and an
 * npm killed outright passes nothing. So, once the process that started it is gone, it stops as
 * on SIGTERM (once). Started otherwise (a service manager, a container, `nohup`), it lives on.
 */
const stopWithLauncher = () => {
  const launcher = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === launcher) return;
    clearInterval(watch);
    process.kill(process.pid, 'SIGTERM');
  }, 250);
  watch.unref();
};
if (process.env.npm_lifecycle_event) stopWithLauncher();

const built = buildTime();
// RELAY_FROM_BUILD=1 runs the build even when a source changed after it (`npm run bench` measures
// the build it made, whatever is edited meanwhile); without a build it is an error, not the sources.
const forceBuild = process.env.RELAY_FROM_BUILD === '1' && process.env.RELAY_FROM_SOURCES !== '1';
if (forceBuild && typeof built !== 'number') {
  process.stderr.write('RELAY_FROM_BUILD=1 but there is no build in dist/: run `npm run build` first\n');
  process.exit(1);
}
if (typeof built === 'number' && process.env.RELAY_FROM_SOURCES !== '1' && (forceBuild || !changedSince(built))) {
  await import('../dist/main.js');
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../apps/cli/main.ts');
}
