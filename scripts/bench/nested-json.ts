import os from 'node:os';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { percentile } from './measures.ts';
/**
 * The nested-JSON step of `npm run bench` (issue 23, item 1): `/health` p99 while nobody attacks,
 * then while three anonymous clients keep sending bodies of a million nested `[` to the JSON routes
 * (send, e-mail sign-in, an account route) for `seconds`. Target: the second within 2× the first.
 */

const p99 = (values: number[]) => percentile(values, 99);

/** `/health` probed one at a time, every 20 ms, for `ms`: each probe's time. */
const probeHealth = async (base: string, ms: number): Promise<number[]> => {
  const times: number[] = [];
  const until = Date.now() + ms;
  while (Date.now() < until) {
    const t0 = performance.now();
    await (await fetch(`${base}/api/v1/health`)).arrayBuffer();
    times.push(performance.now() - t0);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return times;
};

export interface NestedJsonFigures {
  readonly quietP99: number;
  readonly attackedP99: number;
  readonly attackRequests: number;
  readonly statuses: Record<string, number>;
}

export const measureNestedJson = async (base: string, seconds: number): Promise<NestedJsonFigures> => {
  const quiet = await probeHealth(base, Math.min(10_000, seconds * 1000));
  const attacker = spawn(process.execPath, [fileURLToPath(new URL('./nested-json-attacker.mjs', import.meta.url)), base], { stdio: ['ignore', 'pipe', 'inherit'] });
  // The attackers stand for clients on other machines: on this one they must not take the cores
  // from the server under test (they would, at the lowest priority, still use any idle one).
  if (attacker.pid !== undefined) os.setPriority(attacker.pid, 19);
  let output = '';
  attacker.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => attacker.once('exit', () => resolve()));
  const attacked = await probeHealth(base, seconds * 1000);
  attacker.kill('SIGTERM');
  await exited;
  const { requests, statuses } = JSON.parse(output || '{"requests":0,"statuses":{}}') as { requests: number; statuses: Record<string, number> };
  return { quietP99: p99(quiet), attackedP99: p99(attacked), attackRequests: requests, statuses };
};
