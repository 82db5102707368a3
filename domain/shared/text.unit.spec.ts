import { describe, expect, it } from 'vitest';
import { characterCount, isStorableText, textError, textProblem } from './text.ts';

describe('text rules', () => {
  it('counts characters, not UTF-16 units', () => {
    expect(characterCount('abc')).toBe(3);
    expect(characterCount('😀'.repeat(5))).toBe(5);
    expect(characterCount('a😀b')).toBe(3);
    expect(characterCount('\ud800')).toBe(1);
    expect(characterCount('\ud800\ud800\udc00')).toBe(2);
  });

  it('refuses NUL and unpaired surrogates; one-line text refuses control characters', () => {
    expect(isStorableText('héllo 😀\n\t')).toBe(true);
    expect(isStorableText('a\u0000b')).toBe(false);
    expect(isStorableText('a\ud800b')).toBe(false);
    expect(isStorableText('a\udc00')).toBe(false);
    expect(isStorableText('line\nbreak', true)).toBe(false);
    expect(isStorableText('a\u007fb', true)).toBe(false);
    expect(isStorableText('plain name', true)).toBe(true);
  });

  it('caps by characters: 10,000 emoji fit in 10,000', () => {
    expect(textProblem('😀'.repeat(10_000), 10_000)).toBeUndefined();
    expect(textProblem('😀'.repeat(10_001), 10_000)).toBe('too long');
    expect(textProblem('x'.repeat(10_001), 10_000)).toBe('too long');
    expect(textProblem('ok\u0000', 10)).toBe('invalid characters');
  });

  it('says it in the interface’s words', () => {
    expect(textError('ContactId', 'too long', 256)).toBe('ContactId exceeds 256 character limit');
    expect(textError('Message', 'invalid characters', 10_000)).toBe('Message contains invalid characters');
  });
});
