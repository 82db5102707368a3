import { afterEach, describe, expect, it } from 'vitest';
import { MemoryLimitStore } from '../../infra/limits/memory-limit-store.ts';
import { LimitStoreUnavailableError, type LimitStore } from '../../infra/limits/port.ts';
import type { LimitDecision } from '../services/limiter.ts';
import { SlicedLimiter } from './sliced-limiter.ts';

const WINDOW = 60_000;
let clock = 1_800_000_000_000;
const now = () => clock;
const open: SlicedLimiter[] = [];
const instance = (store: LimitStore, options: { idleGiveBackMs?: number } = {}) => {
  const limiter = new SlicedLimiter(store, { windowMs: WINDOW, now, idleGiveBackMs: options.idleGiveBackMs ?? 60_000 });
  open.push(limiter);
  return limiter;
};
afterEach(() => {
  for (const l of open.splice(0)) l.close();
});

/** Counts the store's leases, to show most requests need none. */
const counting = (store: LimitStore) => {
  const calls = { lease: 0 };
  const wrapped: LimitStore = {
    lease: (...args) => {
      calls.lease++;
      return store.lease(...args);
    },
    giveBack: (...args) => store.giveBack(...args),
    evict: (n) => store.evict(n),
    close: () => store.close(),
  };
  return { wrapped, calls };
};

describe('sliced limiter', () => {
  it('three instances round-robin never allow more than the budget in a window, and ask the store once per slice', async () => {
    const { wrapped, calls } = counting(new MemoryLimitStore());
    const instances = [instance(wrapped), instance(wrapped), instance(wrapped)];
    let allowed = 0;
    for (let i = 0; i < 300; i++) if ((await instances[i % 3]!.consume('poll:c1', 1, 100)).allowed) allowed++;
    expect(allowed).toBeLessThanOrEqual(100);
    // Units parked in the other two instances' slices (at most a slice each, 10) are what it may fall short by.
    expect(allowed).toBeGreaterThanOrEqual(100 - 2 * 10);
    // A lease per slice of 10, and per instance once the budget is spent (then refused here for a moment).
    expect(calls.lease).toBeLessThanOrEqual(15);
    // Given back, the parked units serve the next requests, still within the budget.
    for (const l of instances) await l.giveBackAll();
    for (let i = 0; i < 30; i++) if ((await instances[i % 3]!.consume('poll:c1', 1, 100)).allowed) allowed++;
    expect(allowed).toBe(100);
  });

  it('answers from its slice at once, without a promise, while the slice lasts', async () => {
    const l = instance(new MemoryLimitStore());
    expect(await l.consume('send:c', 5, 600)).toMatchObject({ allowed: true, remaining: 595 });
    const next = l.consume('send:c', 5, 600);
    expect(next).not.toBeInstanceOf(Promise);
    expect(next).toEqual({ allowed: true, remaining: 590, resetAt: clock + WINDOW });
  });

  it('refuses a batch over what is left whole, and says what is left and when the shared window ends', async () => {
    const store = new MemoryLimitStore();
    const [a, b] = [instance(store), instance(store)];
    expect(await a.consume('send:c', 50, 100)).toMatchObject({ allowed: true, remaining: 60 - 50 + 40 });
    clock += 1_000;
    // a holds 10 unspent in its slice: b can have 40 of the 50 it asks for, so the batch is refused whole.
    const refused = (await b.consume('send:c', 50, 100)) as LimitDecision;
    expect(refused).toEqual({ allowed: false, remaining: 40, resetAt: clock - 1_000 + WINDOW }); // the window a opened
    clock += 1_000; // past b's moment of refusing without asking
    expect(await b.consume('send:c', 40, 100)).toMatchObject({ allowed: true });
    await a.giveBackAll();
    clock += 1_000;
    expect(await b.consume('send:c', 10, 100)).toMatchObject({ allowed: true, remaining: 0 });
    clock += 1_000;
    expect(await a.consume('send:c', 1, 100)).toMatchObject({ allowed: false, remaining: 0 });
    clock += WINDOW;
    expect(await b.consume('send:c', 100, 100)).toMatchObject({ allowed: true, remaining: 0, resetAt: clock + WINDOW });
  });

  it('an instance killed mid-window takes only its slice with it', async () => {
    const store = new MemoryLimitStore();
    const doomed = new SlicedLimiter(store, { windowMs: WINDOW, now, idleGiveBackMs: 60_000 });
    await doomed.consume('poll:c', 1, 100); // leases 1 + a slice of 10, spends 1; then dies (never closed, never gives back)
    const survivor = instance(store);
    let allowed = 0;
    for (let i = 0; i < 200; i++) if ((await survivor.consume('poll:c', 1, 100)).allowed) allowed++;
    expect(allowed).toBe(100 - 11);
  });

  it('gives back a slice idle for a second, so another instance can spend it', async () => {
    const store = new MemoryLimitStore();
    const a = instance(store, { idleGiveBackMs: 20 });
    const b = instance(store, { idleGiveBackMs: 20 });
    expect(await a.consume('k', 1, 20)).toMatchObject({ allowed: true }); // a leases 1 + 2, holds 2
    let allowed = 0;
    for (let i = 0; i < 20; i++) if ((await b.consume('k', 1, 20)).allowed) allowed++;
    expect(allowed).toBe(17);
    clock += 300; // a's slice idle now, b's refusing moment over
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(await b.consume('k', 1, 20)).toMatchObject({ allowed: true });
  });

  it('holds the budget per instance while the store cannot be reached, and says so once', async () => {
    const failures: Error[] = [];
    const away: LimitStore = {
      lease: async () => {
        throw new LimitStoreUnavailableError('down');
      },
      giveBack: async () => undefined,
      evict: async () => 0,
      close: async () => undefined,
    };
    const l = new SlicedLimiter(away, { windowMs: WINDOW, now, onStoreFailure: (e) => void failures.push(e) });
    open.push(l);
    let allowed = 0;
    for (let i = 0; i < 20; i++) if ((await l.consume('k', 1, 10)).allowed) allowed++;
    expect(allowed).toBe(10);
    expect(failures).toHaveLength(1);
  });

  it('serialises one key\'s leases in one instance: concurrent requests never overspend', async () => {
    const l = instance(new MemoryLimitStore());
    const decisions = await Promise.all(Array.from({ length: 50 }, () => l.consume('k', 3, 100)));
    expect(decisions.filter((d) => d.allowed)).toHaveLength(33);
  });
});
