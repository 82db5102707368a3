import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
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
});
