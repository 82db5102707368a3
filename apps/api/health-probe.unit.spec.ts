import { describe, expect, it } from 'vitest';
import { createHealthProbe } from './health-probe.ts';

describe('health probe', () => {
  it('asks at most once per freshness window and reports a failure as unhealthy', async () => {
    let now = 0;
    let calls = 0;
    let up = true;
    const probe = createHealthProbe(
      async () => {
        calls++;
        if (!up) throw new Error('down');
      },
      250,
      () => now,
    );
    expect(await Promise.all([probe(), probe(), probe()])).toEqual([true, true, true]);
    expect(calls).toBe(1);
    up = false;
    now = 249;
    expect(await probe()).toBe(true);
    now = 250;
    expect(await probe()).toBe(false);
    expect(calls).toBe(2);
    up = true;
    now = 500;
    expect(await probe()).toBe(true);
  });

  it('answers at once, not as a promise, while its last answer is fresh and known', async () => {
    let now = 0;
    let up = false;
    const probe = createHealthProbe(
      async () => {
        if (!up) throw new Error('down');
      },
      250,
      () => now,
    );
    const first = probe();
    expect(first).toBeInstanceOf(Promise);
    expect(probe()).toBe(first); // still being asked: the same promise
    expect(await first).toBe(false);
    expect(probe()).toBe(false);
    up = true;
    now = 250;
    expect(await probe()).toBe(true);
    expect(probe()).toBe(true);
  });
});
