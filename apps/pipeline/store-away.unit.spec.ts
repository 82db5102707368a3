import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../../test/support/eventually.ts';
import { runWhileStoreAnswers, type StoreAwayWatch, type YieldableWork } from './store-away.ts';

describe('work held while the event store answers', () => {
  let watch: StoreAwayWatch | undefined;
  afterEach(async () => {
    await watch?.stop();
    watch = undefined;
  });

  /** A work that counts its starts and stops. */
  const work = (name: string, mayYield?: () => boolean) => {
    const counts = { starts: 0, stops: 0 };
    const w: YieldableWork = {
      name,
      start: async () => {
        counts.starts++;
        return { stop: async () => void counts.stops++ };
      },
      ...(mayYield ? { mayYield } : {}),
    };
    return { w, counts };
  };

  const start = async (store: { answering: boolean; hangs?: boolean }, works: YieldableWork[], lines: string[]) => {
    const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const ping = () => (store.answering ? Promise.resolve() : store.hangs ? new Promise<void>(() => undefined) : Promise.reject(new Error('connect ETIMEDOUT')));
    watch = await runWhileStoreAnswers({ ping, log, awayAfterMs: 150, probeEveryMs: 10, probeTimeoutMs: 30 }, works);
    return watch;
  };

  it('gives its work up once the store has not answered for the bound, and takes it up again when it answers', async () => {
    const store = { answering: true };
    const roles = work('delivery roles');
    const lines: string[] = [];
    const w = await start(store, [roles.w], lines);
    expect(roles.counts).toEqual({ starts: 1, stops: 0 });

    store.answering = false;
    const awayAt = Date.now();
    await eventually(() => expect(w.yielded()).toEqual(['delivery roles']), 5_000);
    expect(Date.now() - awayAt).toBeGreaterThanOrEqual(150);
    expect(roles.counts).toEqual({ starts: 1, stops: 1 });
    expect(lines.join('')).toContain('the event store does not answer: this instance gives its share of this work to the others until it does');

    store.answering = true;
    await eventually(() => expect(w.yielded()).toEqual([]), 5_000);
    expect(roles.counts).toEqual({ starts: 2, stops: 1 });
    expect(lines.join('')).toContain('the event store answers again');
  });

  it('counts a probe that hangs as no answer', async () => {
    const store = { answering: true, hangs: true };
    const roles = work('gateway roles');
    const w = await start(store, [roles.w], []);
    store.answering = false;
    await eventually(() => expect(w.yielded()).toEqual(['gateway roles']), 5_000);
  });

  it('keeps a work that may not be given up (a hand-off it could not record) until it may', async () => {
    const store = { answering: true };
    let pending = 1;
    const deliveries = work('deliveries', () => pending === 0);
    const roles = work('delivery roles');
    const w = await start(store, [deliveries.w, roles.w], []);
    store.answering = false;
    await eventually(() => expect(w.yielded()).toEqual(['delivery roles']), 5_000);
    await new Promise((resolve) => setTimeout(resolve, 100)); // more looks: still held
    expect(deliveries.counts).toEqual({ starts: 1, stops: 0 });
    pending = 0;
    await eventually(() => expect(w.yielded()).toEqual(['deliveries', 'delivery roles']), 5_000);
  });

  it('does not give work up for a store that fails shorter than the bound (a restart)', async () => {
    const store = { answering: true };
    const roles = work('delivery roles');
    const w = await start(store, [roles.w], []);
    store.answering = false;
    await new Promise((resolve) => setTimeout(resolve, 60));
    store.answering = true;
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(w.yielded()).toEqual([]);
    expect(roles.counts).toEqual({ starts: 1, stops: 0 });
  });

  it('stops every work still running when it stops', async () => {
    const roles = work('delivery roles');
    const w = await start({ answering: true }, [roles.w], []);
    await w.stop();
    watch = undefined;
    expect(roles.counts).toEqual({ starts: 1, stops: 1 });
  });
});
