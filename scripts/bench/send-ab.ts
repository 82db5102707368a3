/**
 * `node --import tsx scripts/bench/send-ab.ts --variant NAME=DIR[,KEY=VALUE…] --variant … [--rounds 4]
 * [--seconds 5] [--connections 50] [--settle 120]`: the CPU a send of 50 costs, compared between
 * variants in one session (issue 49). A variant is a kept scale-bench store (`npm run bench:scale --
 * --keep` leaves it, with its probe's keys in `probe-keys.json`) and settings for Relay; the same
 * store under two settings compares the settings, two stores under the same settings compare the
 * stores (1 user against 10,000).
 *
 * The variants run in turn, in ABBA order (A B, B A, …), so that a VM slowing down or a store
 * growing with the sends weighs on both alike. Each turn starts Relay (the JavaScript build, as the
 * scale bench does) on the variant's store, waits until it has caught up and settled, warms up with
 * a second of sends, then posts sends of 50 for `--seconds` with `--connections` and waits until
 * they are delivered. Its CPU per accepted send, from /proc per thread (pipeline thread told apart
 * by its nice value), counts the delivery too. The store grows by every turn's messages: keep turns
 * short, and compare within a run only.
 */
import autocannon from 'autocannon';
import fs from 'node:fs';
import path from 'node:path';
import { freePort } from '../../test/support/relay-process.ts';
import { percentile } from './measures.ts';
import { sendOf50Body } from './scale/loads.ts';
import type { ProbeKeys } from './scale/population.ts';
import { benchRelayEnv, cpuSince, drained, quiet, startRelay, stopRelay, threadCpu } from './scale/relay-run.ts';

process.env.RELAY_FROM_BUILD = '1';
const argv = process.argv.slice(2);
const arg = (name: string): string | undefined => (argv.includes(`--${name}`) ? argv[argv.indexOf(`--${name}`) + 1] : undefined);
const num = (name: string, fallback: number) => (arg(name) === undefined ? fallback : Number(arg(name)));

interface Variant {
  readonly name: string;
  readonly dir: string;
  readonly env: Record<string, string>;
}

const variants: Variant[] = argv.flatMap((a, i) => {
  if (a !== '--variant') return [];
  const spec = argv[i + 1] ?? '';
  const [name, rest] = [spec.slice(0, spec.indexOf('=')), spec.slice(spec.indexOf('=') + 1)];
  const [dir, ...settings] = rest.split(',');
  if (!name || !dir || !fs.existsSync(path.join(dir, 'probe-keys.json'))) throw new Error(`--variant ${spec}: NAME=DIR[,KEY=VALUE…] with DIR a kept scale-bench store (probe-keys.json)`);
  return [{ name, dir, env: Object.fromEntries(settings.map((s) => [s.slice(0, s.indexOf('=')), s.slice(s.indexOf('=') + 1)])) }];
});
if (variants.length < 2) throw new Error('at least two --variant NAME=DIR[,KEY=VALUE…]');
const rounds = num('rounds', 4);
const seconds = num('seconds', 5);
const connections = num('connections', 50);

interface Turn {
  readonly sends: number;
  readonly sendsPerSecond: number;
  /** CPU µs per accepted send: all threads, the API thread, the pipeline thread. */
  readonly allUs: number;
  readonly mainUs: number;
  readonly pipelineUs: number;
}

const turn = async (variant: Variant): Promise<Turn> => {
  const probe = JSON.parse(fs.readFileSync(path.join(variant.dir, 'probe-keys.json'), 'utf8')) as ProbeKeys;
  const env = { ...benchRelayEnv(variant.dir), ...variant.env };
  const run = await startRelay(env, await freePort(), { inspect: false });
  try {
    await drained(run, { published: true });
    await quiet(run.pid, undefined, num('settle', 120) * 1000);
    const target = {
      url: `${run.base}/api/v1/messages/send`,
      method: 'POST' as const,
      headers: { authorization: `Bearer ${probe.oneApp}`, 'content-type': 'application/json' },
      body: sendOf50Body(probe.appIds[0]!),
      connections,
    };
    await autocannon({ ...target, duration: 1 });
    await drained(run);
    const before = threadCpu(run.pid);
    const result = await autocannon({ ...target, duration: seconds });
    if (result.non2xx > 0 || result.errors > 0) throw new Error(`${variant.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
    await drained(run);
    const used = cpuSince(before, threadCpu(run.pid));
    const sends = result.requests.total;
    const us = (ms: number) => (ms * 1000) / Math.max(1, sends);
    return { sends, sendsPerSecond: result.requests.average, allUs: us(used.total), mainUs: us(used.main), pipelineUs: us(used.pipeline) };
  } finally {
    await stopRelay(run);
  }
};

const turns = new Map<string, Turn[]>(variants.map((v) => [v.name, []]));
for (let round = 0; round < rounds; round++) {
  const order = round % 2 === 0 ? variants : [...variants].reverse();
  for (const variant of order) {
    const t = await turn(variant);
    turns.get(variant.name)!.push(t);
    console.log(`round ${round + 1} ${variant.name}: ${t.sends} sends (${Math.round(t.sendsPerSecond)}/s), µs per send: all ${t.allUs.toFixed(0)}, API ${t.mainUs.toFixed(0)}, pipeline ${t.pipelineUs.toFixed(0)}`);
  }
}

const median = (values: number[]) => percentile(values, 50);
console.log('\n| variant | sends/s | all threads µs per send | API µs | pipeline µs |\n|---|---|---|---|---|');
for (const [name, list] of turns) {
  const cell = (pick: (t: Turn) => number) => `${median(list.map(pick)).toFixed(0)} (${list.map((t) => pick(t).toFixed(0)).join(' · ')})`;
  console.log(`| ${name} | ${cell((t) => t.sendsPerSecond)} | ${cell((t) => t.allUs)} | ${cell((t) => t.mainUs)} | ${cell((t) => t.pipelineUs)} |`);
}
