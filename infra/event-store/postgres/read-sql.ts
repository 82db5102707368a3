/** Reads of the whole log on PostgreSQL: their SQL depends on the filter, so it is composed here. */
import { eventColumns, quoteSchema, safeHeadSql } from './schema.ts';

export type ListShape = 'none' | 'one' | 'many';

/** Which optional filter criteria a read has. */
export interface ReadAllShape {
  /** 'one' is bound as a scalar, so the (category|type, global_position) indexes give the order. */
  readonly categories: ListShape;
  readonly streams: ListShape;
  readonly types: ListShape;
  readonly since: boolean;
  readonly until: boolean;
  /** Whether the read is by tags (bound as one text[]). */
  readonly tags: boolean;
}

/** The size a page counts for an event: its data and metadata as stored (UTF-8 bytes of JSON text). */
const sizeSql = (alias: string) => `octet_length(${alias}.data::text) + octet_length(${alias}.metadata::text)`;

/**
 * The criteria of a filter on `events` aliased `alias`, their parameters numbered after `$bound`
 * in the order categories, streams, types, since, until; `next` numbers those that follow (tags).
 */
const criteriaOf = (shape: ReadAllShape, bound: number, alias: string) => {
  let index = bound;
  const next = () => `$${++index}`;
  const list = (column: string, shape: ListShape) =>
    shape === 'none' ? undefined : shape === 'one' ? `${column} = ${next()}` : `${column} = ANY(${next()}::text[])`;
  const criteria = [
    // Implies global_position <= head (head is the max position below xmin). Not written as a
    // range on global_position: the planner cannot estimate it and then sorts the whole tail.
    `${alias}.transaction_id < b.xmin`,
    list(`${alias}.category`, shape.categories),
    list(`${alias}.stream_name`, shape.streams),
    list(`${alias}.type`, shape.types),
    shape.since ? `${alias}.recorded_at >= ${next()}` : undefined,
    shape.until ? `${alias}.recorded_at < ${next()}` : undefined,
  ].filter((clause): clause is string => clause !== undefined);
  return { criteria, next };
};

/**
 * Several categories and nothing else (the read models' reads): their positions come from the
 * (category, global_position) index, each category's range by its own index-only scan, merged and
 * cut at $2, and only those events are fetched. As one `category = ANY(...)` the index gives no
 * order by position, so the planner walked the primary key from $1 and filtered: through every
 * event of the other categories in between (session 39, 9.4 million events: 7.8 million rows
 * filtered, 5–7 s a page, past the 10 s query timeout under load). Exact: the first $2 positions
 * of the union are among the first $2 of each category; an event of a transaction at or above
 * xmin lies beyond the safe head (append-function.ts), as every later one does, so dropping it
 * after the cut leaves nothing unread below the head. With other criteria too (types, streams,
 * times) the cut would come before them: those reads keep the plain form.
 *
 * Each range is bounded as `(category, global_position) > (v, $1) AND category <= v`, ordered by
 * both columns, not as `category = v AND global_position > $1`: with that, the planner still took
 * the primary key's walk inside each range (17 s on that history), and with the row comparison
 * beside the equality the scan started at the category's first entry (600 ms a category at the head
 * of a busy one). Only the (category, global_position) index can serve this form, and the row
 * comparison is its scan's start. The categories are parameter $4, as criteriaOf numbers them.
 */
const categoriesOnly = (shape: ReadAllShape): boolean =>
  shape.categories === 'many' && shape.streams === 'none' && shape.types === 'none' && !shape.since && !shape.until && !shape.tags;

/**
 * The safe head and up to $2 matching events after $1 and at or below it, in one statement (one
 * snapshot): `head` is how far the log has been scanned when fewer than $2 events come back.
 * Parameters: after, limit, maxBytes, then categories, streams, types (text, or text[] for
 * 'many'), since, until, tags (text[]), as present.
 *
 * Byte bound: the running total of the events' sizes is computed in SQL (octet_length reads the
 * stored length, without detoasting), and only the events that fit are returned with their data
 * and metadata, plus the first that does not, without them (`fits` false): it says the page was
 * cut. The first event always fits. So no more than `maxBytes` (beyond the first event) crosses
 * the wire or sits in the client's memory, whatever the limit.
 *
 * Tags: each tag's range of `event_tags` (after $1, other criteria checked on the event, at most
 * $2 entries) is read by its own index range scan, and the ranges are merged in order and cut at
 * $2: the first $2 matching events are among the first $2 of the tag each carries.
 *
 * Returns one row with null event columns when nothing matches.
 */
export const readAllSql = (schema: string, shape: ReadAllShape): string => {
  const s = quoteSchema(schema);
  let page: string;
  if (shape.tags) {
    const { criteria, next } = criteriaOf(shape, 3, 'f');
    const where = ['t.tag = g.tag', 't.global_position > $1', ...criteria];
    const tags = next();
    page = `
      SELECT ${eventColumns}, ${sizeSql('e')} AS size
        FROM (SELECT DISTINCT c.global_position
                FROM unnest(${tags}::text[]) AS g(tag)
                CROSS JOIN LATERAL (
                  SELECT t.global_position FROM ${s}.event_tags t
                    JOIN ${s}.events f ON f.global_position = t.global_position
                   WHERE ${where.join(' AND ')}
                   ORDER BY t.global_position
                   LIMIT $2
                ) c
               ORDER BY c.global_position
               LIMIT $2) m
        JOIN ${s}.events e ON e.global_position = m.global_position
       ORDER BY e.global_position`;
  } else if (categoriesOnly(shape)) {
    page = `
      SELECT ${eventColumns}, ${sizeSql('e')} AS size
        FROM (SELECT c.global_position
                FROM (SELECT DISTINCT u.v FROM unnest($4::text[]) AS u(v)) g
                CROSS JOIN LATERAL (
                  SELECT i.global_position FROM ${s}.events i
                   WHERE (i.category, i.global_position) > (g.v, $1) AND i.category <= g.v
                   ORDER BY i.category, i.global_position
                   LIMIT $2
                ) c
               ORDER BY c.global_position
               LIMIT $2) m
        JOIN ${s}.events e ON e.global_position = m.global_position
       WHERE e.transaction_id < b.xmin
       ORDER BY e.global_position`;
  } else {
    const where = ['e.global_position > $1', ...criteriaOf(shape, 3, 'e').criteria];
    page = `
      SELECT ${eventColumns}, ${sizeSql('e')} AS size FROM ${s}.events e
       WHERE ${where.join(' AND ')}
       ORDER BY e.global_position
       LIMIT $2`;
  }
  return `
    WITH b AS MATERIALIZED (
      SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin, ${safeHeadSql(s)} AS head
    )
    SELECT b.head AS safe_head, r.* FROM b LEFT JOIN LATERAL (
      SELECT w.global_position, w.event_id, w.stream_name, w.stream_version, w.type, w.recorded_at,
             w.fits,
             CASE WHEN w.fits THEN w.data END AS data,
             CASE WHEN w.fits THEN w.metadata END AS metadata
        FROM (SELECT p.*, row_number() OVER running AS n,
                     (row_number() OVER running = 1 OR sum(p.size) OVER running <= $3) AS fits,
                     sum(p.size) OVER running - p.size AS before
                FROM (${page}) p
              WINDOW running AS (ORDER BY p.global_position ROWS UNBOUNDED PRECEDING)) w
       -- The events that fit, and the first that does not: its predecessor fits.
       WHERE w.n <= 2 OR w.before <= $3
    ) r ON true
    ORDER BY r.global_position`;
};

/**
 * How many events a read after $1 would return, counted up to $2, in one statement (one snapshot,
 * the same safe head as readAllSql's): index entries are counted, no event's data is read.
 * Parameters: after, limit, then as readAllSql's after its maxBytes.
 *
 * Tags: each tag's range counts at most $2 entries, and the positions are counted once each: when
 * a tag has $2 or more, so has the union, and otherwise nothing was cut.
 */
export const countSql = (schema: string, shape: ReadAllShape): string => {
  const s = quoteSchema(schema);
  const b = 'WITH b AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)';
  if (shape.tags) {
    const { criteria, next } = criteriaOf(shape, 2, 'f');
    const where = ['t.tag = g.tag', 't.global_position > $1', ...criteria];
    return `
      ${b}
      SELECT least(count(DISTINCT c.global_position), $2) AS n
        FROM b, unnest(${next()}::text[]) AS g(tag)
        CROSS JOIN LATERAL (
          SELECT t.global_position FROM ${s}.event_tags t
            JOIN ${s}.events f ON f.global_position = t.global_position
           WHERE ${where.join(' AND ')}
           LIMIT $2
        ) c`;
  }
  const where = ['e.global_position > $1', ...criteriaOf(shape, 2, 'e').criteria];
  return `
    ${b}
    SELECT count(*) AS n FROM (SELECT 1 FROM b, ${s}.events e WHERE ${where.join(' AND ')} LIMIT $2) c`;
};

/**
 * A chunk of events to derive tags of, after $1: at most $2 events and $3 bytes of data (at least
 * one), so that a chunk's rows stay bounded in the client's memory.
 */
export const retagChunkSql = (schema: string): string => {
  const s = quoteSchema(schema);
  return `
    SELECT w.global_position, w.stream_name, w.type, w.data
      FROM (SELECT e.global_position, e.stream_name, e.type, e.data,
                   sum(octet_length(e.data::text)) OVER running - octet_length(e.data::text) AS before
              FROM (SELECT * FROM ${s}.events WHERE global_position > $1 ORDER BY global_position LIMIT $2) e
            WINDOW running AS (ORDER BY e.global_position ROWS UNBOUNDED PRECEDING)) w
     WHERE w.before < $3
     ORDER BY w.global_position`;
};
