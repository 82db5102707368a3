/**
 * Checks of the port's inputs that the SQLite and PostgreSQL stores make alike (EventStoreDB has
 * its own rules for ids and names, in eventstoredb/mapping.ts, and uses the filter checks here).
 */
import type { EventFilter, EventTagger, ExpectedVersion } from './port.ts';

/** Whether a stream at `current` satisfies `expected`. */
export const versionMatches = (expected: ExpectedVersion, current: bigint): boolean => {
  switch (expected) {
    case 'any':
      return true;
    case 'stream_exists':
      return current > 0n;
    case 'no_stream':
      return current === 0n;
    default:
      return current === expected;
  }
};

/** A positive integer of milliseconds, or RangeError. */
export const positiveMs = (value: number, name: string): number => {
  if (!Number.isSafeInteger(value) || value < 1) throw new RangeError(`${name} must be a positive integer, got ${value}`);
  return value;
};

/** Milliseconds since the epoch of a valid Date, or RangeError naming it. */
export const epochMs = (date: Date, name: string): number => {
  const ms = date instanceof Date ? date.getTime() : Number.NaN;
  if (Number.isNaN(ms)) throw new RangeError(`${name} is an invalid Date`);
  return ms;
};

export const validDate = (date: Date, name: string): Date => {
  epochMs(date, name);
  return date;
};

/** A read's filter can name this many tags at most: each costs an index range scan. */
export const MAX_FILTER_TAGS = 256;

/** Checks the parts of a filter a store cannot ignore: dates, and the number of tags. */
export const validFilter = (filter: EventFilter | undefined): EventFilter | undefined => {
  if (filter === undefined) return undefined;
  if (filter.since !== undefined) epochMs(filter.since, 'filter.since');
  if (filter.until !== undefined) epochMs(filter.until, 'filter.until');
  if (filter.tags !== undefined && filter.tags.length > MAX_FILTER_TAGS) {
    throw new RangeError(`filter.tags names ${filter.tags.length} tags, at most ${MAX_FILTER_TAGS} are allowed`);
  }
  return filter;
};

/**
 * Whether a filter can match no event of a store: an empty list matches nothing, and neither does
 * a tags filter in a store opened without a tagger (it keeps no tags).
 */
export const filterMatchesNothing = (filter: EventFilter | undefined, tagger: EventTagger | undefined): boolean =>
  filter?.categories?.length === 0 ||
  filter?.streams?.length === 0 ||
  filter?.types?.length === 0 ||
  filter?.tags?.length === 0 ||
  (filter?.tags !== undefined && tagger === undefined);

/** Distinct tags of a filter, in a stable order (one statement shape per count). */
export const distinctTags = (tags: readonly string[]): string[] => [...new Set(tags)].sort();
