import { randomUUID } from 'node:crypto';
import { END, WrongExpectedVersionError, type EventStoreDBClient } from '@eventstore/db-client';
import type { AllReads } from './all-reads.ts';
import { ORIGIN_EVENT, ORIGIN_STREAM, isDataEvent, parsePosition, type StreamNames } from './mapping.ts';
import type { StreamReads } from './stream-reads.ts';

/**
 * The namespace's origin: the commit position of its first event minus one, which global
 * positions are counted from (mapping.ts). Found once by a scan of $all and stored in the origin
 * stream (the first writer wins); undefined while the namespace has no event.
 */
export const createOrigin = (client: EventStoreDBClient, names: StreamNames, streams: StreamReads, all: AllReads) => {
  let origin: bigint | undefined;
  let loading: Promise<bigint | undefined> | undefined;

  const readStored = async (): Promise<bigint | undefined> => {
    const event = await streams.one(names.qualify(ORIGIN_STREAM), END);
    return event === undefined ? undefined : parsePosition((event.data as { commit?: unknown } | null)?.commit);
  };

  /** The origin: stored, else derived from the namespace's first event and stored (first writer wins). */
  const load = async (): Promise<bigint | undefined> => {
    let found = await readStored();
    if (found === undefined) {
      let first: bigint | undefined;
      await all.scan('start', undefined, (event) => {
        if (!isDataEvent(names, event.streamId, event.type)) return true;
        first = event.position!.commit;
        return false;
      });
      if (first === undefined) return undefined;
      try {
        await client.appendToStream(
          names.qualify(ORIGIN_STREAM),
          [{ id: randomUUID(), contentType: 'application/json', type: ORIGIN_EVENT, data: { commit: String(first - 1n) }, metadata: undefined }],
          { expectedRevision: 'no_stream' },
        );
        found = first - 1n;
      } catch (error) {
        if (!(error instanceof WrongExpectedVersionError)) throw error;
        found = await readStored();
        if (found === undefined) throw new Error(`The origin stream ${names.qualify(ORIGIN_STREAM)} holds no valid origin`);
      }
    }
    origin = found;
    return found;
  };

  /** The namespace's origin, undefined while the namespace has no event. */
  const resolve = (): Promise<bigint | undefined> => {
    if (origin !== undefined) return Promise.resolve(origin);
    loading ??= load().finally(() => (loading = undefined));
    return loading;
  };

  return {
    resolve,
    /** The origin, for a caller that knows an event exists (it read or wrote one). */
    async require(): Promise<bigint> {
      // A load already in flight may have scanned before the caller's event was committed: a
      // second call joins a load that started after it, or starts one.
      const found = (await resolve()) ?? (await resolve());
      if (found === undefined) throw new Error('EventStoreDB: the namespace has events but its first event could not be found');
      return found;
    },
  };
};

export type Origin = ReturnType<typeof createOrigin>;
