import { percentile, rssMb } from './measures.ts';

/**
 * `GET /api/v1/events` under many streams (issue 13): another tenant writes a history of about
 * 6 MB, then 60 streams (12 keys of one tenant, 5 each) replay that tenant's history at once. RSS
 * and health's latency are sampled meanwhile. Before the streams read by tag in byte-bounded pages,
 * 60 such streams took RSS from 154 MB to 1.1–1.3 GB and health to 1.4 s.
 */
export const measureEventStreams = async (options: { base: string; dash: string; headers: Record<string, string>; relayPid: number; row: (name: string, value: string) => void }) => {
  const { base, dash, headers } = options;
  const newApp = async (name: string) => (await (await fetch(`${dash}/apps`, { method: 'POST', headers, body: JSON.stringify({ name, protocol: ['signal'] }) })).json()) as { id: string };
  const newKey = async (appId: string) =>
    ((await (await fetch(`${dash}/credentials`, { method: 'POST', headers, body: JSON.stringify({ type: 'api-key', appIds: [appId], name: 'streams' }) })).json()) as { secret: string }).secret;
  const other = await newApp('other tenant');
  const otherKey = await newKey(other.id);
  const text = 'history '.padEnd(2_000, 'h');
  let historyBytes = 0;
  while (historyBytes < 6_000_000) {
    const body = JSON.stringify({ messages: Array.from({ length: 50 }, () => ({ appId: other.id, messenger: 'signal', contactId: '+15550003', message: text })) });
    const res = await fetch(`${base}/api/v1/messages/send`, { method: 'POST', headers: { authorization: `Bearer ${otherKey}`, 'content-type': 'application/json' }, body });
    if (res.status !== 202) throw new Error(`history: ${res.status}`);
    await res.arrayBuffer();
    historyBytes += body.length;
  }
  const reader = await newApp('reader tenant');
  const keys = await Promise.all(Array.from({ length: 12 }, () => newKey(reader.id)));
  const before = rssMb(options.relayPid);
  let peak = before;
  const healthMs: number[] = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rssMb(options.relayPid));
      const t0 = performance.now();
      await (await fetch(`${base}/api/v1/health`)).arrayBuffer();
      healthMs.push(performance.now() - t0);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const began = performance.now();
  const frames = await Promise.all(
    keys.flatMap((key) =>
      Array.from({ length: 5 }, async () => {
        const res = await fetch(`${base}/api/v1/events?follow=false`, { headers: { authorization: `Bearer ${key}` } });
        if (res.status !== 200) throw new Error(`event stream: ${res.status}`);
        return (await res.text()).split('\n\n').filter((block) => block.includes('data: ')).length;
      }),
    ),
  );
  const seconds = (performance.now() - began) / 1000;
  sampling = false;
  await sampler;
  options.row(
    '60 event streams over a 6 MB history of another tenant',
    `RSS ${before.toFixed(0)} → peak ${peak.toFixed(0)} MB, health p99 ${percentile(healthMs, 99).toFixed(0)} ms during; ${frames.length} streams of ${frames[0]} events each in ${seconds.toFixed(1)} s`,
  );
};
