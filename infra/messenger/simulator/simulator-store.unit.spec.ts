import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DeliveryWithdrawnError } from '../port.ts';
import { SimulatorStore } from './simulator-store.ts';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
});

describe('the simulator’s outbox', () => {
  it('keeps only its most recent deliveries', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-sim-'));
    dirs.push(dir);
    const store = new SimulatorStore(dir, 20);
    for (let i = 0; i < 100; i++)
      store.record({ messageId: `m${i}`, messenger: 'signal', from: '+1555', contactId: '+1556', text: `t${i}`, groupId: null, attempt: 1, ok: true, reason: null, at: i });
    const kept = store.deliveries();
    expect(kept.length).toBeGreaterThanOrEqual(20);
    expect(kept.length).toBeLessThanOrEqual(22);
    expect(kept.at(-1)?.messageId).toBe('m99');
    expect(kept[0]!.messageId).toBe(`m${100 - kept.length}`);
    store.close();
  });

  it('decides and records the deliveries handed in one turn together: attempts counted in order, injected failures taken once', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-sim-'));
    dirs.push(dir);
    const store = new SimulatorStore(dir);
    store.failNext('signal', '+1557', 1, 'unreachable');
    const handed = (messageId: string, contactId: string) => ({ messageId, messenger: 'signal' as const, from: '+1555', contactId, text: messageId, groupId: null });
    const takeIt = (take: () => { reason: string; permanent: boolean } | undefined) => {
      const injected = take();
      return injected ? { ok: false as const, permanent: injected.permanent, reason: injected.reason } : { ok: true as const };
    };
    const results = await Promise.all([
      store.handOver(handed('m1', '+1556'), takeIt),
      store.handOver(handed('m2', '+1557'), takeIt),
      store.handOver(handed('m3', '+1557'), takeIt),
      store.handOver(handed('m1', '+1556'), takeIt),
    ]);
    expect(results).toEqual([{ ok: true }, { ok: false, permanent: false, reason: 'unreachable' }, { ok: true }, { ok: true }]);
    expect(store.deliveries().map((d) => [d.messageId, d.attempt, d.ok, d.reason])).toEqual([
      ['m1', 1, true, null],
      ['m2', 1, false, 'unreachable'],
      ['m3', 1, true, null],
      ['m1', 2, true, null],
    ]);
    store.close();
  });

  it('asks each delivery whether it is still held when the hand-offs of its turn are made, and makes no attempt of one that is not', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-sim-'));
    dirs.push(dir);
    const store = new SimulatorStore(dir);
    const handed = (messageId: string) => ({ messageId, messenger: 'signal' as const, from: '+1555', contactId: '+1556', text: messageId, groupId: null });
    let held = true;
    const results = Promise.allSettled([store.handOver(handed('m1'), () => ({ ok: true }), () => held), store.handOver(handed('m2'), () => ({ ok: true }))]);
    held = false; // lost after the hand-off was queued, before the turn's hand-offs were made (a process frozen in between)
    const [m1, m2] = await results;
    expect(m1.status === 'rejected' && m1.reason).toBeInstanceOf(DeliveryWithdrawnError);
    expect(m2).toEqual({ status: 'fulfilled', value: { ok: true } });
    expect(store.deliveries().map((d) => d.messageId)).toEqual(['m2']);
    store.close();
  });

  it('rejects every delivery handed in a turn whose transaction fails', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-sim-'));
    dirs.push(dir);
    const store = new SimulatorStore(dir);
    const handed = { messageId: 'm1', messenger: 'signal' as const, from: '+1555', contactId: '+1556', text: 't', groupId: null };
    const both = Promise.allSettled([store.handOver(handed, () => ({ ok: true })), store.handOver(handed, () => ({ ok: true }))]);
    store.close();
    expect((await both).map((result) => result.status)).toEqual(['rejected', 'rejected']);
  });
});
