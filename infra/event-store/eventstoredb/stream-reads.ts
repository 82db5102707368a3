import {
  BACKWARDS,
  END,
  FORWARDS,
  START,
  StreamNotFoundError,
  type EventStoreDBClient,
  type RecordedEvent as EsdbClientRecordedEvent,
} from '@eventstore/db-client';
import type { EsdbRecordedEvent } from './mapping.ts';

/** Reads of single ESDB streams (data streams and Relay's own), by their ESDB name. */
export const createStreamReads = (client: EventStoreDBClient) => ({
  /** Every event of an ESDB stream, oldest first ([] when it does not exist). */
  async all(streamId: string): Promise<EsdbRecordedEvent[]> {
    const events: EsdbRecordedEvent[] = [];
    try {
      for await (const resolved of client.readStream(streamId, { direction: FORWARDS, fromRevision: START })) {
        if (resolved.event !== undefined) events.push(resolved.event as EsdbClientRecordedEvent);
      }
    } catch (error) {
      if (error instanceof StreamNotFoundError) return [];
      throw error;
    }
    return events;
  },

  /** One event of an ESDB stream: the last one (`END`), or the one at a revision. */
  async one(streamId: string, at: bigint | typeof END): Promise<EsdbRecordedEvent | undefined> {
    try {
      const read = client.readStream(streamId, {
        direction: at === END ? BACKWARDS : FORWARDS,
        fromRevision: at,
        maxCount: 1,
      });
      for await (const resolved of read) {
        if (resolved.event !== undefined) return resolved.event as EsdbClientRecordedEvent;
      }
      return undefined;
    } catch (error) {
      if (error instanceof StreamNotFoundError) return undefined;
      throw error;
    }
  },
});

export type StreamReads = ReturnType<typeof createStreamReads>;
