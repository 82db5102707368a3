import { describe, expect, it } from 'vitest';
import { prefixedNames } from './prefixed-names.ts';

describe('prefixedNames', () => {
  it('gives the prefix and the id, the same name each time, and starts over past its bound', () => {
    const name = prefixedNames('poll:', 2);
    expect(name('a')).toBe('poll:a');
    expect(name('b')).toBe('poll:b');
    expect(name('a')).toBe('poll:a');
    // A third id clears the kept names: still the right names.
    expect(name('c')).toBe('poll:c');
    expect([name('a'), name('b'), name('c')]).toEqual(['poll:a', 'poll:b', 'poll:c']);
  });
});
