/**
 * The request loads of a scale point: verify, an empty poll of a key with one app, an empty poll
 * of a key with 25 apps, and a send of 50 messages, each as alternating slices of a bare Fastify
 * anchor (scripts/bench/bare-fastify.mjs, the same process for the whole run) and Relay, as
 * `npm run bench` pairs them: the VM's speed moves between points, the ratio to the anchor of the
 * same moment is what compares across points. Besides each throughput, Relay's CPU per request
 * (all threads less the idle background work, and the API and pipeline threads) from /proc; a send's is counted until its
 * messages are delivered (its delivery included), each send slice starting with nothing queued.
 */
import autocannon from 'autocannon';
import { percentile } from '../measures.ts';
import { cpuSince, drained, threadCpu, type RelayRun } from './relay-run.ts';

export interface LoadFigures {
  /** Relay's requests per second (mean of its slices). */
  readonly rps: number;
  /** The anchor's requests per second (mean of its slices). */
  readonly anchorRps: number;
  /** Median of the slices' Relay/anchor ratios. */
  readonly ratio: number;
  /**
   * CPU µs per request, all threads, less what the process spends idle in the same time (its
   * background work, measured just before: at a point where it grows, it would count as request
   * cost); `grossUs` with it.
   */
  readonly cpuUs: number;
  readonly grossUs: number;
  /** µs per request of the API thread, and of the pipeline thread (gross). */
  readonly mainUs: number;
  readonly pipelineUs: number;
  readonly p99Ms: number;
}

export type LoadName = 'verify' | 'poll1' | 'poll25' | 'send50';
export const LOAD_NAMES: readonly LoadName[] = ['verify', 'poll1', 'poll25', 'send50'];
export const LOAD_LABELS: Record<LoadName, string> = {
  verify: 'verify',
  poll1: 'empty poll, key of 1 app',
  poll25: 'empty poll, key of 25 apps',
  send50: 'send of 50',
};

/** The loads in the order measured; the loads of one group have their slices interleaved. */
const LOAD_GROUPS: ReadonlyArray<readonly LoadName[]> = [['verify'], ['poll1', 'poll25'], ['send50']];

type Target = { url: string; options: Partial<autocannon.Options> };

const slice = async (target: Target, seconds: number, connections: number) => {
  const result = await autocannon({ url: target.url, connections, duration: seconds, ...target.options });
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${target.url}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  return { rps: result.requests.average, requests: result.requests.total, p99: result.latency.p99 };
};

/** The send of 50 the loads post: 50 messages of 120 characters to 50 Signal contacts of `appId`. */
export const sendOf50Body = (appId: string): string =>
  JSON.stringify({ messages: Array.from({ length: 50 }, (_, i) => ({ appId, messenger: 'signal', contactId: `+1555${String(2_000_000 + i)}`, message: `scale bench message ${i} `.padEnd(120, 'x') })) });

export const measureLoads = async (
  run: RelayRun,
  anchorBase: string,
  probe: { oneApp: string; allApps: string; appIds: readonly string[] },
  options: { seconds: number; rounds: number; connections: number; idleMsPerSecond: number },
): Promise<Record<LoadName, LoadFigures>> => {
  const body = sendOf50Body(probe.appIds[0]!);
  const json = { 'content-type': 'application/json' };
  const targets: Record<LoadName, { relay: Target; anchor: Target; send: boolean }> = {
    verify: { relay: { url: `${run.base}/api/v1/auth/verify`, options: { headers: { authorization: `Bearer ${probe.oneApp}` } } }, anchor: { url: `${anchorBase}/health`, options: {} }, send: false },
    poll1: { relay: { url: `${run.base}/api/v1/messages/poll`, options: { headers: { authorization: `Bearer ${probe.oneApp}` } } }, anchor: { url: `${anchorBase}/health`, options: {} }, send: false },
    poll25: { relay: { url: `${run.base}/api/v1/messages/poll`, options: { headers: { authorization: `Bearer ${probe.allApps}` } } }, anchor: { url: `${anchorBase}/health`, options: {} }, send: false },
    send50: {
      relay: { url: `${run.base}/api/v1/messages/send`, options: { method: 'POST', headers: { authorization: `Bearer ${probe.oneApp}`, ...json }, body } },
      anchor: { url: `${anchorBase}/echo`, options: { method: 'POST', headers: json, body } },
      send: true,
    },
  };
  const out = {} as Record<LoadName, LoadFigures>;
  // The two empty polls are measured in the same rounds, their slices interleaved (A B, B A, ...):
  // measured one after the other, the VM's drift between two loads a minute apart was as large as
  // the difference they are compared for (session 34: +15 % and +20 %, "not shown").
  for (const group of LOAD_GROUPS) {
    const figures = new Map<LoadName, { ratios: number[]; rps: number[]; anchorRps: number[]; p99: number[]; requests: number; wallMs: number; cpu: { total: number; main: number; pipeline: number; other: number } }>();
    for (const name of group) {
      const { relay, anchor, send } = targets[name];
      // One request alone first: a poll's first request makes the broker follow its apps' queues (on
      // Kafka the inbox tail looks them up: the slices' load would stall behind it).
      const first = await fetch(relay.url, { method: relay.options.method ?? 'GET', headers: relay.options.headers as Record<string, string> | undefined, body: relay.options.body as string | undefined });
      await first.arrayBuffer();
      if (!first.ok) throw new Error(`${relay.url}: the first request answered ${first.status}`);
      // Warm-up of both, so that the code is measured optimised.
      await slice(anchor, 1, options.connections);
      await slice(relay, 1, options.connections);
      if (send) await drained(run);
      figures.set(name, { ratios: [], rps: [], anchorRps: [], p99: [], requests: 0, wallMs: 0, cpu: { total: 0, main: 0, pipeline: 0, other: 0 } });
    }
    for (let i = 0; i < options.rounds; i++) {
      for (const name of i % 2 === 0 ? group : [...group].reverse()) {
        const { relay, anchor, send } = targets[name];
        const f = figures.get(name)!;
        const a = await slice(anchor, options.seconds, options.connections);
        const before = threadCpu(run.pid);
        const began = performance.now();
        const r = await slice(relay, options.seconds, options.connections);
        if (send) await drained(run);
        f.wallMs += performance.now() - began;
        const used = cpuSince(before, threadCpu(run.pid));
        f.cpu = { total: f.cpu.total + used.total, main: f.cpu.main + used.main, pipeline: f.cpu.pipeline + used.pipeline, other: f.cpu.other + used.other };
        f.requests += r.requests;
        f.ratios.push(r.rps / a.rps);
        f.rps.push(r.rps);
        f.anchorRps.push(a.rps);
        f.p99.push(r.p99);
      }
    }
    const mean = (values: number[]) => values.reduce((s, v) => s + v, 0) / values.length;
    for (const [name, f] of figures) {
      const us = (ms: number) => (ms * 1000) / Math.max(1, f.requests);
      const net = Math.max(0, f.cpu.total - (options.idleMsPerSecond * f.wallMs) / 1000);
      out[name] = { rps: mean(f.rps), anchorRps: mean(f.anchorRps), ratio: percentile(f.ratios, 50), cpuUs: us(net), grossUs: us(f.cpu.total), mainUs: us(f.cpu.main), pipelineUs: us(f.cpu.pipeline), p99Ms: Math.max(...f.p99) };
    }
  }
  return out;
};
