import type Database from 'better-sqlite3';
import type { EventFilter, RecordedEvent } from '../port.ts';
import { distinctTags, epochMs } from '../validation.ts';
import { categoryPositionsSql, countSql, readAllSql, sql, tagPositionsSql, type EventRow, type ReadAllShape } from './schema.ts';

/** Statements of filtered reads kept prepared (one per shape of filter and limit). */
const STATEMENT_CACHE_SIZE = 64;
/** Positions one tag's or category's cursor reads at a time while they are merged. */
const CHUNK = 256;
/**
 * Up to this many positions (the log's positions are dense), several categories are read by one
 * statement that sorts what matches; over a longer range, one cursor per category, merged.
 */
const SORTED_RANGE = 2048n;
/**
 * ... and first, a window of this many positions per event asked for is read in position order:
 * where the categories are most of the log (the queue publisher and the statistics behind a send
 * load), that fills the page at the cost of reading it; only a sparser range goes on to the cursors.
 */
const DENSE_WINDOW = 4n;

export interface EventPage {
  readonly events: RecordedEvent[];
  /** Whether the page ended on its limit of events or bytes (more may match after it). */
  readonly cut: boolean;
}

/**
 * Filtered, byte-bounded reads of the whole log. Rows are taken one at a time from the statement
 * (never a whole LIMIT-sized page first), so a page holds at most `maxBytes` of data and metadata
 * beyond its first event.
 *
 * A tags filter reads each tag's range of event_tags (with the other criteria checked on the
 * event) in chunks and merges them in position order: the cost follows the events the tags have
 * after `after`, not everything they ever had.
 */
export const createEventReader = (db: Database.Database) => {
  const statements = new Map<string, Database.Statement<unknown[], unknown>>();
  const eventAt = db.prepare<[bigint], EventRow>(sql.eventAt);
  const headNow = db.prepare<[], bigint>(sql.headPosition).pluck();

  const prepared = <R>(text: string): Database.Statement<unknown[], R> => {
    let statement = statements.get(text);
    if (statement === undefined) {
      if (statements.size >= STATEMENT_CACHE_SIZE) statements.delete(statements.keys().next().value!);
      statement = db.prepare<unknown[], unknown>(text);
      statements.set(text, statement);
    }
    return statement as Database.Statement<unknown[], R>;
  };

  const shapeOf = (filter: EventFilter | undefined, upTo: boolean, limit: number): ReadAllShape => ({
    categories: filter?.categories?.length,
    streams: filter?.streams?.length,
    types: filter?.types?.length,
    since: filter?.since !== undefined,
    until: filter?.until !== undefined,
    upTo,
    limit,
  });

  const criteriaParameters = (filter: EventFilter | undefined): unknown[] => {
    const parameters: unknown[] = [...(filter?.categories ?? []), ...(filter?.streams ?? []), ...(filter?.types ?? [])];
    if (filter?.since !== undefined) parameters.push(epochMs(filter.since, 'filter.since'));
    if (filter?.until !== undefined) parameters.push(epochMs(filter.until, 'filter.until'));
    return parameters;
  };

  /** Adds events to a page while they fit; false once the page is full (by bytes). */
  const pager = (maxBytes: number) => {
    const events: RecordedEvent[] = [];
    let bytes = 0;
    return {
      events,
      add(row: EventRow): boolean {
        const size = Buffer.byteLength(row.data, 'utf8') + Buffer.byteLength(row.metadata, 'utf8');
        if (events.length > 0 && bytes + size > maxBytes) return false;
        bytes += size;
        events.push(toRecordedEvent(row));
        return true;
      },
    };
  };

  const readUntagged = (after: bigint, upTo: bigint | undefined, limit: number, maxBytes: number, filter: EventFilter | undefined): EventPage => {
    const categories = filter?.categories;
    if (categories !== undefined && categories.length > 1 && (upTo === undefined || upTo - after > SORTED_RANGE)) {
      // Its statements must all see the log up to the same point (another connection may commit
      // between two of them): up to the head committed now, as a read by tags.
      return readByCategories([...new Set(categories)], after, upTo ?? headNow.get()!, limit, maxBytes, filter);
    }
    const statement = prepared<EventRow>(readAllSql(shapeOf(filter, upTo !== undefined, limit)));
    const parameters: unknown[] = [after, ...(upTo === undefined ? [] : [upTo]), ...criteriaParameters(filter)];
    const page = pager(maxBytes);
    for (const row of statement.iterate(...parameters)) {
      // Leaving the loop early resets the statement: the rows after it are never read.
      if (!page.add(row)) return { events: page.events, cut: true };
    }
    return { events: page.events, cut: page.events.length === limit };
  };

  /**
   * Adds to `page` the events at the positions several ordered cursors give (each read in chunks
   * of CHUNK after where it stands), merged in position order, until it holds `limit` events.
   */
  const mergePositions = (chunkOf: (key: string, after: bigint) => bigint[], keys: readonly string[], after: bigint, limit: number, page: ReturnType<typeof pager>): EventPage => {
    const cursors = keys.map((key) => ({ key, after, buffer: [] as bigint[], index: 0, exhausted: false }));
    const head = (cursor: (typeof cursors)[number]): bigint | undefined => {
      if (cursor.index === cursor.buffer.length && !cursor.exhausted) {
        cursor.buffer = chunkOf(cursor.key, cursor.after);
        cursor.index = 0;
        cursor.exhausted = cursor.buffer.length < CHUNK;
        if (cursor.buffer.length > 0) cursor.after = cursor.buffer.at(-1)!;
      }
      return cursor.buffer[cursor.index];
    };
    while (page.events.length < limit) {
      let next: bigint | undefined;
      for (const cursor of cursors) {
        const position = head(cursor);
        if (position !== undefined && (next === undefined || position < next)) next = position;
      }
      if (next === undefined) return { events: page.events, cut: false };
      for (const cursor of cursors) if (cursor.buffer[cursor.index] === next) cursor.index += 1;
      const row = eventAt.get(next);
      if (row !== undefined && !page.add(row)) return { events: page.events, cut: true };
    }
    return { events: page.events, cut: true };
  };

  /**
   * Several categories over a long range. A single statement with `category IN (...)` reads the
   * (category, position) index category by category and sorts every matching row of the range to
   * return the first `limit`: with a subscription 300,000 events behind, each page of 20 cost the
   * whole backlog, and the publisher-lag gauge held the API thread 250-550 ms per scrape of
   * /metrics. So the range is read in position order for a window of DENSE_WINDOW positions per
   * event asked for, and, where that does not fill the page (the categories are sparse there), on
   * with one cursor per category on that index, merged.
   */
  const readByCategories = (categories: readonly string[], after: bigint, upTo: bigint, limit: number, maxBytes: number, filter: EventFilter | undefined): EventPage => {
    const page = pager(maxBytes);
    const window = BigInt(limit) * DENSE_WINDOW;
    const windowEnd = upTo - after > window ? after + window : upTo;
    const scan = prepared<EventRow>(readAllSql(shapeOf(filter, true, limit), true));
    for (const row of scan.iterate(after, windowEnd, ...criteriaParameters(filter))) {
      if (!page.add(row)) return { events: page.events, cut: true };
    }
    if (page.events.length === limit) return { events: page.events, cut: true };
    if (windowEnd === upTo) return { events: page.events, cut: false };
    const { categories: _merged, ...rest } = filter ?? {};
    const statement = prepared<bigint>(categoryPositionsSql(shapeOf(rest, true, CHUNK))).pluck();
    const others = criteriaParameters(rest);
    return mergePositions((category, from) => statement.all(category, from, upTo, ...others), categories, windowEnd, limit, page);
  };

  const readTagged = (tags: readonly string[], after: bigint, upTo: bigint, limit: number, maxBytes: number, filter: EventFilter | undefined): EventPage => {
    const statement = prepared<bigint>(tagPositionsSql(shapeOf(filter, true, CHUNK))).pluck();
    const others = criteriaParameters(filter);
    return mergePositions((tag, from) => statement.all(tag, from, upTo, ...others), distinctTags(tags), after, limit, pager(maxBytes));
  };

  return {
    /**
     * Matching events after `after` (and at or below `upTo`), in order, at most `limit` of them
     * and `maxBytes` of data and metadata (at least one). A tags filter needs `upTo`: the tags'
     * ranges are read by several statements, which must all see the log up to the same point.
     */
    read(after: bigint, upTo: bigint | undefined, limit: number, maxBytes: number, filter: EventFilter | undefined): EventPage {
      if (limit === 0) return { events: [], cut: false };
      if (filter?.tags === undefined) return readUntagged(after, upTo, limit, maxBytes, filter);
      if (upTo === undefined) throw new Error('A read by tags needs an upper bound');
      return readTagged(filter.tags, after, upTo, limit, maxBytes, filter);
    },

    /** How many events match after `after`, up to `limit`: entries of an index counted, no event read where the filter allows. */
    count(after: bigint, limit: number, filter: EventFilter | undefined): number {
      if (limit === 0) return 0;
      const tags = filter?.tags === undefined ? undefined : distinctTags(filter.tags);
      const statement = prepared<bigint>(countSql(shapeOf(filter, false, limit), tags?.length)).pluck();
      return Number(statement.get(...(tags ?? []), after, ...criteriaParameters(filter)));
    },
  };
};

export const toRecordedEvent = (row: EventRow): RecordedEvent => ({
  id: row.event_id,
  type: row.type,
  data: JSON.parse(row.data) as unknown,
  metadata: JSON.parse(row.metadata) as RecordedEvent['metadata'],
  streamName: row.stream_name,
  streamVersion: row.stream_version,
  globalPosition: row.global_position,
  recordedAt: new Date(Number(row.recorded_at)),
});
