import type Database from 'better-sqlite3';
import type { EventTagger } from '../port.ts';
import { RETAG_AFTER_KEY, RETAG_CHUNK, RETAG_VERSION_KEY, TAGGER_VERSION_KEY, tagsOf } from '../tags.ts';
import { sql } from './schema.ts';

/**
 * Brings the tag index to `tagger`'s version before the store serves: when the file's tags were
 * derived with another version, or never (a file written before tags, or without a tagger), the
 * tags of every event are derived again.
 *
 * Chunk by chunk, each in its own write transaction (`BEGIN IMMEDIATE`), with the progress in
 * `store_meta`: the write lock makes two processes opening the file at once take turns, and each
 * turn continues where the last one stopped, so no event is tagged twice and other writers wait
 * for one chunk at most. The first turn drops the old tags; the last one, which finds no event
 * left, records the version.
 *
 * Returns the number of events whose tags were derived by this call.
 */
export const bringTagsToVersion = (db: Database.Database, tagger: EventTagger): number => {
  const readMeta = db.prepare<[string], string>(sql.readMeta).pluck();
  const writeMeta = db.prepare<[string, string]>(sql.writeMeta);
  const deleteMeta = db.prepare<[string]>(sql.deleteMeta);
  const chunk = db.prepare<[bigint, number], { global_position: bigint; stream_name: string; type: string; data: string }>(sql.retagChunk);
  const deleteAllTags = db.prepare(sql.deleteAllTags);
  const insertTag = db.prepare<[string, bigint]>(sql.insertTag);

  /** One turn; true once the index is at the tagger's version. */
  const turn = db.transaction((): { done: boolean; tagged: number } => {
    if (readMeta.get(TAGGER_VERSION_KEY) === tagger.version) return { done: true, tagged: 0 };
    const resuming = readMeta.get(RETAG_VERSION_KEY) === tagger.version;
    // A fresh start drops every tag (of another version) at once; resuming keeps what was derived.
    if (!resuming) deleteAllTags.run();
    const after = resuming ? BigInt(readMeta.get(RETAG_AFTER_KEY) ?? '0') : 0n;
    const tagged: [bigint, readonly string[]][] = [];
    // Rows are parsed one at a time; only their tags are kept until the chunk is written.
    for (const row of chunk.iterate(after, RETAG_CHUNK)) {
      tagged.push([row.global_position, tagsOf(tagger, { streamName: row.stream_name, type: row.type, data: JSON.parse(row.data) as unknown })]);
    }
    if (tagged.length === 0) {
      writeMeta.run(TAGGER_VERSION_KEY, tagger.version);
      deleteMeta.run(RETAG_VERSION_KEY);
      deleteMeta.run(RETAG_AFTER_KEY);
      return { done: true, tagged: 0 };
    }
    const last = tagged.at(-1)![0];
    for (const [position, tags] of tagged) for (const tag of tags) insertTag.run(tag, position);
    writeMeta.run(RETAG_VERSION_KEY, tagger.version);
    writeMeta.run(RETAG_AFTER_KEY, String(last));
    return { done: false, tagged: tagged.length };
  });

  let total = 0;
  for (;;) {
    const { done, tagged } = turn.immediate();
    total += tagged;
    if (done) return total;
  }
};
