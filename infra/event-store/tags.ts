/**
 * Tags as the stores keep them: derived from an event by the application's tagger, checked and
 * bounded here (a tagger is application code; an index row per tag is paid on every append).
 */
import type { EventTagger } from './port.ts';

/** At most this many distinct tags per event. */
export const MAX_TAGS_PER_EVENT = 64;
/** Longest tag, in UTF-16 code units. */
export const MAX_TAG_LENGTH = 256;

/** Store metadata key under which the tagger version of the tag index is recorded. */
export const TAGGER_VERSION_KEY = 'tagger.version';
/** While tags are derived again: the version being derived and how far (position) it got. */
export const RETAG_VERSION_KEY = 'retag.version';
export const RETAG_AFTER_KEY = 'retag.after';

/** Events read per chunk while tags are derived again (one write transaction each on SQLite). */
export const RETAG_CHUNK = 1000;

/** The distinct tags of an event; throws RangeError when the tagger gives something unusable. */
export const tagsOf = (
  tagger: EventTagger | undefined,
  event: { readonly streamName: string; readonly type: string; readonly data: unknown },
): readonly string[] => {
  if (tagger === undefined) return [];
  const tags = tagger.tagsOf(event);
  if (!Array.isArray(tags)) throw new RangeError(`The tagger (version ${tagger.version}) gave no array of tags for a ${event.type} of ${event.streamName}`);
  if (tags.length === 0) return [];
  const distinct = [...new Set(tags)];
  if (distinct.length > MAX_TAGS_PER_EVENT) {
    throw new RangeError(`The tagger gave ${distinct.length} tags for a ${event.type} of ${event.streamName}: at most ${MAX_TAGS_PER_EVENT}`);
  }
  for (const tag of distinct) {
    if (typeof tag !== 'string' || tag.length === 0 || tag.length > MAX_TAG_LENGTH) {
      throw new RangeError(`The tagger gave the tag ${JSON.stringify(tag)} for a ${event.type} of ${event.streamName}: tags are strings of 1 to ${MAX_TAG_LENGTH} characters`);
    }
  }
  return distinct;
};

export const validTagger = (tagger: EventTagger | undefined): EventTagger | undefined => {
  if (tagger === undefined) return undefined;
  if (typeof tagger.version !== 'string' || tagger.version === '' || typeof tagger.tagsOf !== 'function') {
    throw new RangeError('A tagger needs a non-empty version string and a tagsOf function');
  }
  return tagger;
};
