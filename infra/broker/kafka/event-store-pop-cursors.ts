import { ExpectedVersionConflictError, type EventStore } from '../../event-store/port.ts';
import type { CursorEntry, PopClaim, PopCursorStore } from './pop-cursor.ts';

/** The event recording one pop: offsets as strings (JSON has no bigint). */
export interface RecordsPoppedData {
  readonly topic: string;
  readonly partitions: ReadonlyArray<{ partition: number; popped: string[]; skipped: string[] }>;
  readonly ids: readonly string[];
}

export const RECORDS_POPPED = 'RecordsPopped';
/** Appended when the topic is deleted: the claims before it are void. Data: `{ topic }`. */
export const TOPIC_DELETED = 'TopicDeleted';
export const popCursorStreamName = (topic: string) => `popcursor-${topic}`;

/** Pop claims kept in the event store: one stream per topic, `RecordsPopped` and `TopicDeleted` events. */
export const createEventStorePopCursors = (store: EventStore): PopCursorStore => ({
  async load(topic) {
    const { version, events } = await store.readStream(popCursorStreamName(topic));
    return {
      version,
      claims: events
        .filter((event) => event.type === RECORDS_POPPED || event.type === TOPIC_DELETED)
        .map((event): CursorEntry => {
          if (event.type === TOPIC_DELETED) return { version: event.streamVersion, reset: true };
          const data = event.data as RecordsPoppedData;
          return {
            version: event.streamVersion,
            claim: {
              ids: data.ids,
              partitions: data.partitions.map((p) => ({ partition: p.partition, popped: p.popped.map(BigInt), skipped: p.skipped.map(BigInt) })),
            },
          };
        }),
    };
  },

  async append(topic, expectedVersion, claim: PopClaim) {
    const data: RecordsPoppedData = {
      topic,
      partitions: claim.partitions.map((p) => ({ partition: p.partition, popped: p.popped.map(String), skipped: p.skipped.map(String) })),
      ids: claim.ids,
    };
    try {
      const result = await store.appendToStream(popCursorStreamName(topic), [{ type: RECORDS_POPPED, data, metadata: { actor: 'system:poll' } }], {
        expectedVersion,
      });
      return result.nextVersion;
    } catch (error) {
      if (error instanceof ExpectedVersionConflictError) return 'conflict';
      throw error;
    }
  },

  async reset(topic) {
    const stream = popCursorStreamName(topic);
    for (;;) {
      const { version, events } = await store.readStream(stream);
      // Nothing was ever popped, or the last deletion said it already: nothing to void.
      if (version === 0n || events.at(-1)?.type === TOPIC_DELETED) return;
      try {
        await store.appendToStream(stream, [{ type: TOPIC_DELETED, data: { topic }, metadata: { actor: 'system:broker' } }], { expectedVersion: version });
        return;
      } catch (error) {
        if (!(error instanceof ExpectedVersionConflictError)) throw error;
      }
    }
  },
});
