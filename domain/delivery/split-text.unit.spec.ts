import { describe, expect, it } from 'vitest';
import { splitForDisplay } from './split-text.ts';

const words = (n: number) => Array.from({ length: n }, (_, i) => `word${i}`).join(' ');

describe('splitForDisplay', () => {
  it('leaves a text within the limit whole, without a number', () => {
    expect(splitForDisplay('short enough', 12)).toEqual(['short enough']);
  });

  it('cuts at word boundaries into numbered parts of at most the limit, losing only the whitespace at the cuts', () => {
    const text = words(600); // ~4,500 characters
    const parts = splitForDisplay(text, 2000);
    expect(parts).toHaveLength(3);
    parts.forEach((part, i) => {
      expect([...part].length).toBeLessThanOrEqual(2000);
      expect(part.startsWith(`(${i + 1}/3) word`)).toBe(true);
      expect(part.endsWith(' ')).toBe(false);
    });
    expect(parts.map((p) => p.replace(/^\(\d+\/3\) /, '')).join(' ')).toBe(text);
  });

  it('counts characters, not UTF-16 units', () => {
    const parts = splitForDisplay('😀'.repeat(30), 20);
    expect(parts.every((p) => [...p].length <= 20)).toBe(true);
    expect(parts.map((p) => p.replace(/^\(\d+\/\d+\) /, '')).join('')).toBe('😀'.repeat(30));
  });

  it('cuts inside a word only when the word alone is longer than a part', () => {
    expect(splitForDisplay(`${'x'.repeat(25)} tail`, 16)).toEqual(['(1/3) xxxxxxxxxx', '(2/3) xxxxxxxxxx', '(3/3) xxxxx tail']);
  });

  it('widens the number when there are ten parts or more', () => {
    const parts = splitForDisplay(words(40), 30);
    expect(parts.length).toBeGreaterThanOrEqual(10);
    expect(parts[0]!.startsWith(`(1/${parts.length}) `)).toBe(true);
    expect(parts.every((p) => [...p].length <= 30)).toBe(true);
  });
});
