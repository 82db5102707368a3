import { AggregatorRegistry, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createRequestDurations } from './request-durations.ts';

const BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
const OBSERVED = [
  [{ method: 'GET', route: '/api/v1/health', status_code: 200 }, 0.0003],
  [{ method: 'GET', route: '/api/v1/health', status_code: 200 }, 0.001],
  [{ method: 'GET', route: '/api/v1/health', status_code: 503 }, 0.02],
  [{ method: 'POST', route: '/api/v1/messages/send', status_code: 202 }, 0.004],
  [{ method: 'POST', route: '/api/v1/messages/send', status_code: 202 }, 7],
  [{ method: 'GET', route: 'unmatched', status_code: 404 }, 0.0001],
] as const;

/** The same observations in prom-client's own Histogram and in ours, each on registries of its own. */
const both = (registries: number) => {
  const theirs = Array.from({ length: registries }, () => new Registry());
  const ours = Array.from({ length: registries }, () => new Registry());
  const histograms = theirs.map((registry) => new Histogram({ name: 'relay_http_request_duration_seconds', help: 'Duration of answered HTTP requests', labelNames: ['method', 'route', 'status_code'], buckets: BUCKETS, registers: [registry] }));
  const durations = ours.map((registry) => createRequestDurations({ name: 'relay_http_request_duration_seconds', help: 'Duration of answered HTTP requests', buckets: BUCKETS, registers: [registry] }));
  OBSERVED.forEach(([labels, seconds], i) => {
    histograms[i % registries]!.observe(labels, seconds);
    durations[i % registries]!.observe(labels, seconds);
  });
  return { theirs, ours };
};

describe('request durations (a cheaper prom-client histogram)', () => {
  it('reads exactly as prom-client’s Histogram with the same observations', async () => {
    const { theirs, ours } = both(1);
    expect(await ours[0]!.metrics()).toBe(await theirs[0]!.metrics());
    expect(await ours[0]!.getMetricsAsJSON()).toEqual(await theirs[0]!.getMetricsAsJSON());
  });

  it('adds up across threads as prom-client’s Histogram does', async () => {
    const { theirs, ours } = both(2);
    const merged = async (registries: Registry[]) => AggregatorRegistry.aggregate(await Promise.all(registries.map((registry) => registry.getMetricsAsJSON()))).metrics();
    const text = await merged(ours);
    expect(text).toBe(await merged(theirs));
    expect(text).toContain('relay_http_request_duration_seconds_count{method="POST",route="/api/v1/messages/send",status_code="202"} 2');
  });
});
