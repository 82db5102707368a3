/**
 * `node --import tsx scripts/bench/profile-start.ts [top]`: where a start of Relay goes. Starts
 * `relay start` (the environment's settings: DATA_DIR, PORT, EVENT_STORE, BROKER, …) under V8's
 * CPU profiler (`--cpu-prof`, one profile per thread), times it from spawn to health 200, stops it
 * (SIGTERM), and prints per thread what it did before health 200: the time sampled, by activity
 * (idle, garbage collection, the rest), the functions with the most self time, and a timeline: in
 * each quarter second since spawn, where the thread's samples were (by Relay's own function on the
 * stack, else the sampled one). The timeline is how session 40 saw the pipeline thread wait for
 * the API thread's restore. Issue 49: the restart of a large store. Profiles are kept in
 * `/tmp/relay-start-profile/`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { activityTimes, selfTimes, timeline, type Profile } from './cpu-profile.ts';

const top = Number(process.argv[2] ?? 20);
const dir = '/tmp/relay-start-profile';
const root = fileURLToPath(new URL('../..', import.meta.url));
const port = Number(process.env.PORT ?? 8080);

/** The samples of `profile` taken before `untilUs` (V8's clock: CLOCK_MONOTONIC, as process.hrtime). */
const before = (profile: Profile, untilUs: number): Profile => {
  const samples: number[] = [];
  const timeDeltas: number[] = [];
  let t = profile.startTime;
  for (let i = 0; i < (profile.samples ?? []).length; i++) {
    t += profile.timeDeltas![i]!;
    if (t > untilUs) break;
    samples.push(profile.samples![i]!);
    timeDeltas.push(profile.timeDeltas![i]!);
  }
  return { ...profile, samples, timeDeltas, endTime: Math.min(profile.endTime, untilUs) };
};

const main = async () => {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const spawnedUs = Number(process.hrtime.bigint() / 1000n);
  const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${dir}`, path.join(root, 'bin/relay.js'), 'start'], { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 120_000;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${port}/api/v1/health`).then((r) => r.status === 200, () => false);
    if (ok) break;
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('relay start did not answer health 200');
    await new Promise((r) => setTimeout(r, 20));
  }
  const healthUs = Number(process.hrtime.bigint() / 1000n);
  console.log(`spawn → health 200: ${((healthUs - spawnedUs) / 1000).toFixed(0)} ms`);
  child.kill('SIGTERM');
  await exited;
  for (const file of fs.readdirSync(dir).sort()) {
    const profile = before(JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8')) as Profile, healthUs);
    const activity = activityTimes(profile);
    const from = (profile.startTime - spawnedUs) / 1000;
    console.log(`\n${file}: from ${from.toFixed(0)} ms after spawn; ${[...activity].map(([k, ms]) => `${k} ${ms.toFixed(0)} ms`).join(', ')}`);
    for (const { name, ms } of selfTimes(profile, top)) console.log(`  ${ms.toFixed(1).padStart(8)} ms  ${name}`);
    console.log('  timeline (s after spawn: the three largest shares of the quarter, ms):');
    for (const { atUs, shares } of timeline(profile, spawnedUs, 250_000, 3)) {
      console.log(`  ${(atUs / 1e6).toFixed(2).padStart(6)}  ${shares.map(({ name, ms }) => `${name} ${ms.toFixed(0)}`).join(' | ')}`);
    }
  }
};

await main();
