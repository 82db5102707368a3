import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import type { KeyRelease, KeyVault } from '../../infra/event-store/port.ts';
import { mergeKeyChanges, SealingWindows } from './sealing-windows.ts';

const sealer = createMessageSealer(createSecretBox('44'.repeat(32)));
const released: KeyRelease[][] = [];
const vault = { release: async (releases: readonly KeyRelease[]) => void released.push([...releases]) } as unknown as KeyVault;
const open: SealingWindows[] = [];
const windows = (windowMs = 60_000, maxUses = 100) => {
  const w = new SealingWindows(sealer, vault, { windowMs, maxUses, retentionMs: 86_400_000 }, pino({ level: 'silent' }));
  open.push(w);
  return w;
};
afterEach(async () => {
  for (const w of open.splice(0)) await w.close();
  released.length = 0;
});
const at = (ms: number) => new Date(Date.parse('2026-01-01T00:00:00.000Z') + ms);

describe('sealing windows: a data key per app and period', () => {
  it('puts a key reserving every use its window may take, then only requires it', () => {
    const w = windows();
    const first = w.take('app_1', 'sendbatch-b1', 3, at(0));
    expect(first.change).toEqual({
      put: [{ id: first.key.id, scope: 'app_1', subject: 'sendbatch-b1', wrapped: first.key.wrapped, uses: 100, expiresAt: at(86_400_000) }],
    });
    w.settled(first.change, true);
    const second = w.take('app_1', 'sendbatch-b2', 2, at(10));
    expect(second.key.id).toBe(first.key.id);
    expect(second.change).toEqual({ require: [first.key.id] });
    expect(w.take('app_2', 'sendbatch-b2', 1, at(10)).key.id).not.toBe(first.key.id);
  });

  it('gives a take a one-off key, reserving just its uses, while the append that puts the window key has not committed', () => {
    const w = windows();
    const first = w.take('app_1', 'sendbatch-b1', 3, at(0));
    const meanwhile = w.take('app_1', 'sendbatch-b2', 2, at(1));
    expect(meanwhile.key.id).not.toBe(first.key.id);
    expect(meanwhile.change).toEqual({
      put: [{ id: meanwhile.key.id, scope: 'app_1', subject: 'sendbatch-b2', wrapped: meanwhile.key.wrapped, uses: 2, expiresAt: at(86_400_001) }],
    });
    w.settled(first.change, true);
    expect(w.take('app_1', 'sendbatch-b3', 1, at(2))).toEqual({ key: first.key, change: { require: [first.key.id] } });
  });

  it('opens a new window after its period or beyond its uses, releasing what the old one did not use', async () => {
    const w = windows(1000, 5);
    const first = w.take('app_1', 's1', 3, at(0));
    const afterPeriod = w.take('app_1', 's2', 1, at(1000));
    expect(afterPeriod.key.id).not.toBe(first.key.id);
    expect(afterPeriod.change.put).toHaveLength(1);
    const overUses = w.take('app_1', 's3', 5, at(1001));
    expect(overUses.key.id).not.toBe(afterPeriod.key.id);
    // A full window releases nothing: its messages' own releases retire its key.
    expect(w.take('app_1', 's4', 1, at(1002)).key.id).not.toBe(overUses.key.id);
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toEqual([[{ id: first.key.id, uses: 2 }], [{ id: afterPeriod.key.id, uses: 4 }]]);
  });

  it('forgets a window whose key the append did not store (it failed, or appended nothing), without releasing it', async () => {
    const w = windows();
    const first = w.take('app_1', 's1', 1, at(0));
    w.settled(first.change, false);
    const next = w.take('app_1', 's2', 1, at(1));
    expect(next.key.id).not.toBe(first.key.id);
    expect(next.change.put).toHaveLength(1);
    w.settled(next.change, true);
    await w.close();
    expect(released).toEqual([[{ id: next.key.id, uses: 99 }]]);
  });

  it('lives no longer than half the retention', () => {
    const w = new SealingWindows(sealer, vault, { windowMs: 1000, maxUses: 100, retentionMs: 600 }, pino({ level: 'silent' }));
    open.push(w);
    const first = w.take('app_1', 's1', 1, at(0));
    w.settled(first.change, true);
    expect(w.take('app_1', 's2', 1, at(299)).key.id).toBe(first.key.id);
    expect(w.take('app_1', 's3', 1, at(300)).key.id).not.toBe(first.key.id);
  });

  it('forgets a window whose key is gone; closing releases what every open window did not use', async () => {
    const w = windows();
    const first = w.take('app_1', 's1', 1, at(0));
    const other = w.take('app_2', 's1', 7, at(0));
    w.drop([first.key.id]);
    const renewed = w.take('app_1', 's2', 1, at(1));
    expect(renewed.change.put).toHaveLength(1);
    await w.close();
    // The dropped key's reservation is not released: its key is gone.
    expect(released).toEqual([expect.arrayContaining([{ id: renewed.key.id, uses: 99 }, { id: other.key.id, uses: 93 }])]);
    expect(released.flat()).toHaveLength(2);
    expect(() => w.take('app_1', 's3', 1, at(2))).toThrow('The sealing windows are closed');
  });

  it('merges the changes of several apps into one', () => {
    const put = { id: 'k1', scope: 'a', subject: 's', wrapped: 'w', uses: 1, expiresAt: at(0) };
    expect(mergeKeyChanges([{ put: [put] }, { require: ['k2'] }])).toEqual({ put: [put], require: ['k2'] });
  });
});
