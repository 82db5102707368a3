import type pg from 'pg';
import type { EventTagger } from '../port.ts';
import { RETAG_AFTER_KEY, RETAG_CHUNK, RETAG_VERSION_KEY, TAGGER_VERSION_KEY, tagsOf } from '../tags.ts';
import { TAG_LOCK_CLASS, quoteSchema } from './identifiers.ts';
import { retagChunkSql } from './read-sql.ts';

/** Data read per chunk at most (beyond the chunk's first event). */
const RETAG_CHUNK_BYTES = 8 * 1024 * 1024;

/**
 * Brings the tag index to `tagger`'s version before the store serves (the store's `ready()` waits
 * for it): when its tags were derived with another version, or never (a schema written before
 * tags, or without a tagger), the tags of every event are derived again.
 *
 * Under a session-level advisory lock held for the whole derivation: a second process opening the
 * store at the same time waits for the first and then finds the version recorded. The work goes
 * in chunks, each one transaction recording its progress, so that a derivation cut short (crash,
 * lost connection) resumes where it stopped. The first chunk drops the old tags (TRUNCATE: other
 * processes' appends wait for that short transaction).
 *
 * Returns the number of events whose tags were derived by this call.
 */
export const bringTagsToVersion = async (pool: pg.Pool, schema: string, tagger: EventTagger): Promise<number> => {
  const s = quoteSchema(schema);
  const client = await pool.connect();
  let broken: unknown;
  try {
    await client.query('SELECT pg_advisory_lock($1, hashtext($2))', [TAG_LOCK_CLASS, schema]);
    try {
      const meta = async (key: string): Promise<string | undefined> =>
        (await client.query<{ value: string }>(`SELECT value FROM ${s}.store_meta WHERE key = $1`, [key])).rows[0]?.value;
      const writeMeta = (key: string, value: string) =>
        client.query(`INSERT INTO ${s}.store_meta (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, [key, value]);
      if ((await meta(TAGGER_VERSION_KEY)) === tagger.version) return 0;
      let after = 0n;
      if ((await meta(RETAG_VERSION_KEY)) === tagger.version) {
        after = BigInt((await meta(RETAG_AFTER_KEY)) ?? '0');
      } else {
        await client.query('BEGIN');
        await client.query(`TRUNCATE ${s}.event_tags`);
        await writeMeta(RETAG_VERSION_KEY, tagger.version);
        await writeMeta(RETAG_AFTER_KEY, '0');
        await client.query('COMMIT');
      }
      const chunkSql = retagChunkSql(schema);
      let total = 0;
      for (;;) {
        const { rows } = await client.query<{ global_position: string; stream_name: string; type: string; data: unknown }>(chunkSql, [
          String(after),
          RETAG_CHUNK,
          RETAG_CHUNK_BYTES,
        ]);
        await client.query('BEGIN');
        if (rows.length === 0) {
          await writeMeta(TAGGER_VERSION_KEY, tagger.version);
          await client.query(`DELETE FROM ${s}.store_meta WHERE key = ANY($1::text[])`, [[RETAG_VERSION_KEY, RETAG_AFTER_KEY]]);
          await client.query('COMMIT');
          return total;
        }
        const tags: string[] = [];
        const positions: string[] = [];
        for (const row of rows) {
          for (const tag of tagsOf(tagger, { streamName: row.stream_name, type: row.type, data: row.data })) {
            tags.push(tag);
            positions.push(row.global_position);
          }
        }
        after = BigInt(rows.at(-1)!.global_position);
        await client.query(
          `INSERT INTO ${s}.event_tags (tag, global_position) SELECT * FROM unnest($1::text[], $2::bigint[]) ON CONFLICT DO NOTHING`,
          [tags, positions],
        );
        await writeMeta(RETAG_AFTER_KEY, String(after));
        await client.query('COMMIT');
        total += rows.length;
      }
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1, hashtext($2))', [TAG_LOCK_CLASS, schema]).catch((error: unknown) => (broken = error));
    }
  } finally {
    // A client whose session may still hold the lock is destroyed rather than pooled.
    client.release(broken instanceof Error ? broken : undefined);
  }
};
