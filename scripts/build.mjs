// `npm run build`: compiles Relay's TypeScript into plain JavaScript in `dist/`, so that a running
// Relay needs no TypeScript loader. tsx registers loader hooks per thread, and each set of hooks
// runs in a V8 isolate of its own: role `all` (two threads) carried two extra isolates, about
// 50 MB of RSS. bin/relay.js runs `dist/` when it is at least as new as every source, and the
// sources through tsx otherwise, so an edit is never shadowed by an old build.
//
// - Two entry points: the command line (`dist/main.js`) and the delivery pipeline's worker thread
//   (`dist/thread-main.js`), side by side with the shared chunks, so that a chunk finds the
//   thread's entry next to itself (see apps/pipeline/pipeline-thread.ts).
// - Code splitting keeps the lazy imports lazy: a store or broker adapter, and the HTTP parts,
//   are loaded only by the processes and threads that use them.
// - The packages are bundled in, but for those that read files of their own package at run time
//   or load native code (UNBUNDLED): a start then reads a few large files instead of ~600 small
//   ones from node_modules in each thread (module loading was most of a restart's time, issue 28).
//   A bundled package's CommonJS `require` of Node's modules goes through `createRequire` (BANNER).
// - The new build is written next to `dist/` and swapped in whole, so that a process starting
//   meanwhile sees the old build or the new one, never half of one; when the code did not change,
//   only `dist/build.json` is replaced. `dist/build.json` says when the sources were read
//   (`sourcesAsOf`, epoch ms): a source changed later makes the build stale.
import { build } from 'esbuild';
import { buildDashboard } from './build-dashboard.mjs';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const dist = path.join(root, 'dist');
const staging = path.join(root, `dist.build-${process.pid}`);
const started = Date.now();

/**
 * Packages left in node_modules: native code (better-sqlite3, sodium-native), files read from
 * their own directory at run time (swagger-ui's static files, @fastify/swagger's package.json,
 * the EventStoreDB client's .proto files), one that imports a CommonJS package dynamically
 * (@fastify/cookie: a bundle would give it the package as a default export only), and the drivers loaded
 * only for the backends that use them (each is one lazy import already).
 */
const UNBUNDLED = [
  'better-sqlite3',
  'sodium-native',
  '@fastify/swagger',
  '@fastify/cookie',
  '@fastify/swagger-ui',
  '@eventstore/db-client',
  'kafkajs',
  'pg',
  'nodemailer',
  'esbuild',
  'tsx',
];
const BANNER = "import { createRequire as __relayCreateRequire } from 'node:module'; const require = __relayCreateRequire(import.meta.url);";

/**
 * `--if-possible` (what `npm start` uses): a build that cannot be made (a read-only checkout, say)
 * is reported in one line and Relay starts from its sources instead of not at all.
 */
const ifPossible = process.argv.includes('--if-possible');

/** Whether `dist/` already holds exactly these files (the build.json aside). */
const unchanged = () => {
  const files = (dir) => fs.readdirSync(dir).filter((name) => name !== 'build.json').sort();
  if (!fs.existsSync(path.join(dist, 'build.json'))) return false;
  const built = files(staging);
  const current = files(dist);
  return built.length === current.length && built.every((name, i) => name === current[i] && fs.readFileSync(path.join(staging, name)).equals(fs.readFileSync(path.join(dist, name))));
};

try {
  fs.rmSync(staging, { recursive: true, force: true });
  await build({
    absWorkingDir: root,
    entryPoints: { main: 'apps/cli/main.ts', 'thread-main': 'apps/pipeline/thread-main.ts' },
    outdir: staging,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    external: UNBUNDLED,
    banner: { js: BANNER },
    sourcemap: 'linked',
    chunkNames: 'chunk-[hash]',
    // With --if-possible a failure is said in one line (the first error in it) instead of one per file.
    logLevel: ifPossible ? 'silent' : 'warning',
  });
  fs.writeFileSync(path.join(staging, 'build.json'), `${JSON.stringify({ sourcesAsOf: started, node: process.version })}\n`);
  if (unchanged()) {
    // Same code: only the build's time moves on (written whole, by rename), so that processes
    // running from dist/ meanwhile are not disturbed at all.
    fs.renameSync(path.join(staging, 'build.json'), path.join(dist, 'build.json'));
    fs.rmSync(staging, { recursive: true, force: true });
  } else {
    const retired = `${dist}.old-${process.pid}`;
    if (fs.existsSync(dist)) fs.renameSync(dist, retired);
    fs.renameSync(staging, dist);
    fs.rmSync(retired, { recursive: true, force: true });
  }
  // The web dashboard's browser bundle (dashboard/dist), served under /dashboard/assets.
  await buildDashboard({ logLevel: ifPossible ? 'silent' : 'warning' });
  console.log(`relay: built dist/ and dashboard/dist/ in ${Date.now() - started} ms`);
} catch (error) {
  fs.rmSync(staging, { recursive: true, force: true });
  const reason = error instanceof Error ? error.message.split('\n').slice(0, 2).join(' ') : String(error);
  console.error(`relay: cannot build dist/ (${reason})${ifPossible ? '; running from the sources' : ''}`);
  process.exitCode = ifPossible ? 0 : 1;
}
