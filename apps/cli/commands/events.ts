import type { EventFilter, EventStore, RecordedEvent } from '../../../infra/event-store/port.ts';
import { toPublicEvent } from '../../history/public-event.ts';

export interface EventsQuery {
  stream?: string[];
  category?: string[];
  type?: string[];
  since?: string;
  until?: string;
  after?: string;
  limit?: string;
}

const parseDate = (name: string, value: string | undefined) => {
  if (value === undefined) return undefined;
  const date = new Date(value);
  if (Number.isNaN(date.getTime())) throw new Error(`--${name} must be an ISO 8601 time, got ${value}`);
  return date;
};

/**
 * One JSON line per event, as every reader outside the store sees it (apps/history/public-event.ts):
 * positions and versions as strings, no secret, key hash or sealed body.
 */
export const eventLine = (event: RecordedEvent) => JSON.stringify(toPublicEvent(event));

/**
 * Writes the filtered history in global order, a page of lines at a time, until `limit` lines or
 * the end; `write` may answer a promise (a pipe that is full: its drain), which is awaited before
 * the next page is read (without, a slow reader made stdout buffer the whole history: ENOBUFS).
 */
export const printEvents = async (store: EventStore, query: EventsQuery, write: (lines: string) => void | Promise<void>): Promise<number> => {
  if (query.after !== undefined && !/^\d+$/.test(query.after)) throw new Error(`--after must be a position, got ${query.after}`);
  if (query.limit !== undefined && !/^\d+$/.test(query.limit)) throw new Error(`--limit must be a number, got ${query.limit}`);
  const since = parseDate('since', query.since);
  const until = parseDate('until', query.until);
  const filter: EventFilter = {
    ...(query.stream?.length ? { streams: query.stream } : {}),
    ...(query.category?.length ? { categories: query.category } : {}),
    ...(query.type?.length ? { types: query.type } : {}),
    ...(since ? { since } : {}),
    ...(until ? { until } : {}),
  };
  let after = BigInt(query.after ?? '0');
  let left = query.limit === undefined ? Number.POSITIVE_INFINITY : Number(query.limit);
  let printed = 0;
  while (left > 0) {
    const page = await store.readAll({ after, limit: Math.min(1000, left), filter });
    if (page.length === 0) break;
    let lines = '';
    for (const event of page) lines += `${eventLine(event)}\n`;
    await write(lines);
    printed += page.length;
    left -= page.length;
    after = page[page.length - 1]!.globalPosition;
  }
  return printed;
};
