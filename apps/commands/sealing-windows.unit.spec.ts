import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import type { KeyVault } from '../../infra/event-store/port.ts';
import { mergeKeyChanges, SealingWindows } from './sealing-windows.ts';

const sealer = createMessageSealer(createSecretBox('44'.repeat(32)));
const released: string[][] = [];
const vault = { release: async (ids: readonly string[]) => void released.push([...ids]) } as unknown as KeyVault;
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
  it('puts a key with one use more than its first messages (the hold), then extends it', () => {
    const w = windows();
    const first = w.take('app_1', 'sendbatch-b1', 3, at(0));
    expect(first.change).toEqual({
      put: [{ id: first.key.id, scope: 'app_1', subject: 'sendbatch-b1', wrapped: first.key.wrapped, uses: 4, expiresAt: at(86_400_000) }],
    });
    const second = w.take('app_1', 'sendbatch-b2', 2, at(10));
    expect(second.key.id).toBe(first.key.id);
    expect(second.change).toEqual({ extend: [{ id: first.key.id, uses: 2 }] });
    expect(w.take('app_2', 'sendbatch-b2', 1, at(10)).key.id).not.toBe(first.key.id);
  });

  it('opens a new window after its period or beyond its uses, releasing the old one’s hold', async () => {
    const w = windows(1000, 5);
    const first = w.take('app_1', 's1', 3, at(0));
    const afterPeriod = w.take('app_1', 's2', 1, at(1000));
    expect(afterPeriod.key.id).not.toBe(first.key.id);
    expect(afterPeriod.change.put).toHaveLength(1);
    const overUses = w.take('app_1', 's3', 5, at(1001));
    expect(overUses.key.id).not.toBe(afterPeriod.key.id);
    await new Promise((resolve) => setImmediate(resolve));
    expect(released).toEqual([[first.key.id], [afterPeriod.key.id]]);
  });

  it('forgets a window whose key is gone; closing releases every hold', async () => {
    const w = windows();
    const first = w.take('app_1', 's1', 1, at(0));
    const other = w.take('app_2', 's1', 1, at(0));
    w.drop([first.key.id]);
    const renewed = w.take('app_1', 's2', 1, at(1));
    expect(renewed.change.put).toHaveLength(1);
    await w.close();
    // The dropped key's hold is not released: its key is gone.
    expect(released).toEqual([expect.arrayContaining([renewed.key.id, other.key.id])]);
    expect(released.flat()).toHaveLength(2);
    expect(() => w.take('app_1', 's3', 1, at(2))).toThrow('The sealing windows are closed');
  });

  it('merges the changes of several apps into one', () => {
    expect(mergeKeyChanges([{ put: [] }, { extend: [{ id: 'k', uses: 1 }] }])).toEqual({ put: [], extend: [{ id: 'k', uses: 1 }] });
  });
});
