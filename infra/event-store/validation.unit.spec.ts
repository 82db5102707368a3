import { describe, expect, it } from 'vitest';
import type { EventTagger } from './port.ts';
import { filterMatchesNothing } from './validation.ts';

const tagger: EventTagger = { version: '1', tagsOf: () => [] };

describe('filterMatchesNothing', () => {
  it('knows that an empty list matches nothing', () => {
    expect(filterMatchesNothing(undefined, tagger)).toBe(false);
    expect(filterMatchesNothing({ categories: ['a'] }, tagger)).toBe(false);
    expect(filterMatchesNothing({ categories: [] }, tagger)).toBe(true);
    expect(filterMatchesNothing({ types: ['T'], streams: [] }, tagger)).toBe(true);
    expect(filterMatchesNothing({ tags: [] }, tagger)).toBe(true);
  });

  it('knows that a tags filter matches nothing in a store without a tagger, and other filters still match there', () => {
    expect(filterMatchesNothing({ tags: ['app:a'] }, undefined)).toBe(true);
    expect(filterMatchesNothing({ tags: ['app:a'] }, tagger)).toBe(false);
    expect(filterMatchesNothing({ categories: ['a'] }, undefined)).toBe(false);
    expect(filterMatchesNothing(undefined, undefined)).toBe(false);
  });
});
