import { describe, expect, it } from 'vitest';
import { Recency } from './recency.ts';

describe('Recency (apps by their latest message)', () => {
  it('given touches, when asked, then the app touched longest ago comes first, and a forgotten one not at all', () => {
    const recency = new Recency();
    for (const appId of ['a', 'b', 'c', 'a']) recency.touch(appId);
    expect(recency.oldest()).toBe('b');
    expect(recency.inOrder()).toEqual(['b', 'c', 'a']);
    recency.forget('b');
    expect(recency.oldest()).toBe('c');
    recency.touch('b');
    expect(recency.inOrder()).toEqual(['c', 'a', 'b']);
  });

  it('given one app touched a million times beside a quiet one, when counted, then the queue stays bounded and the quiet one stays first', () => {
    const recency = new Recency();
    recency.touch('quiet');
    for (let i = 0; i < 1_000_000; i++) recency.touch('busy');
    expect(recency.oldest()).toBe('quiet');
    expect((recency as unknown as { queue: unknown[] }).queue.length).toBeLessThanOrEqual(2 * 2 + 1024 + 1);
  });
});
