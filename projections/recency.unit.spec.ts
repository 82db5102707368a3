import { describe, expect, it } from 'vitest';
import { Recency } from './recency.ts';

describe('Recency (keys by their latest touch)', () => {
  it('given touches, when asked, then the app touched longest ago comes first, and a forgotten one not at all', () => {
    const recency = new Recency<string>();
    for (const appId of ['a', 'b', 'c', 'a']) recency.touch(appId);
    expect(recency.oldest()?.[0]).toBe('b');
    expect(recency.inOrder()).toEqual(['b', 'c', 'a']);
    recency.forget('b');
    expect(recency.oldest()?.[0]).toBe('c');
    recency.touch('b');
    expect(recency.inOrder()).toEqual(['c', 'a', 'b']);
  });

  it('given one app touched a million times beside a quiet one, when counted, then the queue stays bounded and the quiet one stays first', () => {
    const recency = new Recency<string>();
    recency.touch('quiet');
    for (let i = 0; i < 1_000_000; i++) recency.touch('busy');
    expect(recency.oldest()?.[0]).toBe('quiet');
    expect(recency.queued).toBeLessThanOrEqual(2 * 2 + 1024 + 1);
  });

  it('given keys touched and forgotten as fast as the oldest are passed, when counted, then the queue holds no more than twice the keys remembered', () => {
    const recency = new Recency<number>();
    for (let i = 0; i < 100_000; i++) {
      recency.touch(i);
      const oldest = recency.oldest();
      if (i >= 10 && oldest !== undefined) recency.forget(oldest[0]); // expired: ten keys remembered at any time
    }
    expect([...recency.keys()].length).toBe(10);
    expect(recency.queued).toBeLessThanOrEqual(2 * 10 + 1024 + 1);
    expect(recency.inOrder()).toEqual(Array.from({ length: 10 }, (_, i) => 99_990 + i));
  });

  it('given stamps of its own, when touched out of their order, then the oldest is the first touched that is still current, with its stamp', () => {
    const recency = new Recency<string>();
    recency.touch('a', 10);
    recency.touch('b', 12);
    recency.touch('a', 14);
    expect(recency.oldest()).toEqual(['b', 12]);
    expect(recency.stampOf('a')).toBe(14);
    recency.forget('b');
    expect(recency.oldest()).toEqual(['a', 14]);
  });
});
