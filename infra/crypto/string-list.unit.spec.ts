import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeStringList, encodeStringList } from './string-list.ts';

describe('string list', () => {
  it('gives back what it was given: strings of any characters, empty strings and nulls', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.string({ unit: 'grapheme' }), { nil: null })), (items) => {
        expect(decodeStringList(encodeStringList(items))).toEqual(items);
      }),
    );
  });

  it('lays out each item as its length in UTF-16 units, a colon and itself, or - for null', () => {
    expect(encodeStringList(['é😀', null, '', '1:-'])).toBe('3:é😀-0:3:1:-');
    expect(encodeStringList([])).toBe('');
  });

  it('refuses text that is not such a list', () => {
    for (const bad of ['3:ab', 'x', '2', ':a', '01:a', '-x', '99999999999:a', '2:ab3']) expect(() => decodeStringList(bad), bad).toThrow(RangeError);
  });
});
