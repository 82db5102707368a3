import type { EventStore } from '../../../infra/event-store/port.ts';
import type { EventHistory } from './event-history.ts';

/** Events read per page of a stream's history, and bytes (a page of send batches can be large). */
const PAGE_EVENTS = 500;
const PAGE_BYTES = 1024 * 1024;
/** The categories whose events carry app tags (apps/history/event-tags.ts): what the hub follows. */
const TAGGED_CATEGORIES = ['app', 'outbound', 'inbound', 'group', 'credential', 'sendbatch', 'popcursor', 'shred'];

/** The event streams' reads, on the event store: a tenant's pages filtered by tag in the store, bounded by bytes. */
export const storeEventHistory = (store: EventStore): EventHistory => ({
  head: () => store.headPosition(),
  page: (after, tags) => store.readAll({ after, limit: PAGE_EVENTS, maxBytes: PAGE_BYTES, filter: { tags } }),
  follow: (after, handler, onError) =>
    store.subscribe({ after, filter: { categories: TAGGED_CATEGORIES }, batchSize: PAGE_EVENTS, maxBatchBytes: PAGE_BYTES, handler, onError }),
});
