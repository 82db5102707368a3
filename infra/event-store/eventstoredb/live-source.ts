import type { AllStreamResolvedEvent } from '@eventstore/db-client';
import type { EventFilter, EventTagger, RecordedEvent } from '../port.ts';
import { idleFeed, type AllReads, type Start } from './all-reads.ts';
import { isUnavailable } from './errors.ts';
import { FeedEndedError, type LiveSource } from './live-subscription.ts';
import { currentTags, eventBytes, isDataEvent, matchesFilter, storedTagsOf, toCommitPosition, toRecordedEvent, type EsdbRecordedEvent, type StreamNames } from './mapping.ts';
import type { Origin } from './origin.ts';
import { filterMatchesNothing } from '../validation.ts';

export interface LiveSourceContext {
  readonly names: StreamNames;
  readonly all: AllReads;
  readonly origin: Origin;
  readonly tagger: EventTagger | undefined;
  readonly closed: () => boolean;
  readonly unavailable: () => Error;
  /** Runs an operation with the store's error mapping. */
  readonly run: <T>(operation: () => Promise<T>) => Promise<T>;
}

/**
 * The port's event of an ESDB event when it is one of the namespace's and matches the filter
 * (tags checked on the client, derived when the stored ones are of another tagger version).
 */
export const matchingEvent = (context: Pick<LiveSourceContext, 'names' | 'tagger'>, filter: EventFilter | undefined, event: EsdbRecordedEvent, origin: bigint): RecordedEvent | undefined => {
  const recorded = toRecordedEvent(context.names, event, origin);
  if (recorded === undefined) return undefined;
  return matchesFilter(filter, recorded, () => currentTags(context.tagger, storedTagsOf(event), recorded)) ? recorded : undefined;
};

/** What a live subscription (live-subscription.ts) of the store reads: one server-side filtered `subscribeToAll`. */
export const createLiveSource = (context: LiveSourceContext, after: bigint, filter: EventFilter | undefined): LiveSource<AllStreamResolvedEvent> => {
  const { names, all, origin } = context;
  const nothing = filterMatchesNothing(filter, context.tagger);
  const isData = (event: EsdbRecordedEvent): boolean => isDataEvent(names, event.streamId, event.type);
  return {
    async open(resume) {
      if (context.closed()) throw context.unavailable();
      if (nothing) return idleFeed();
      let from: Start = 'start';
      if (resume?.event !== undefined) from = resume.event.position;
      else if (after > 0n) {
        const at = await origin.resolve();
        if (at !== undefined) from = await all.startAfter(toCommitPosition(after, at));
      }
      return all.openFeed(from, filter);
    },
    commitOf: (resolved) => resolved.event?.position.commit ?? resolved.commitPosition ?? -1n,
    async convert(raws) {
      const candidates = raws.flatMap((resolved) => (resolved.event !== undefined && isData(resolved.event) ? [resolved.event] : []));
      if (candidates.length === 0) return [];
      const at = await origin.require();
      return candidates.flatMap((event) => {
        const recorded = matchingEvent(context, filter, event, at);
        return recorded !== undefined && recorded.globalPosition > after ? [recorded] : [];
      });
    },
    async initialHandled() {
      const at = await origin.resolve();
      return at === undefined ? -1n : toCommitPosition(after, at);
    },
    lastToDeliver: (handled) =>
      context.run(async () => {
        if (nothing) return undefined;
        const at = await origin.resolve();
        if (at === undefined) return undefined; // nothing was committed before the call
        const floor = toCommitPosition(after, at);
        return all.findLast(
          (event) => matchingEvent(context, filter, event, at) !== undefined,
          () => (handled > floor ? handled : floor),
        );
      }),
    retryable: (error) => !context.closed() && (error instanceof FeedEndedError || isUnavailable(error)),
    bytesOf: eventBytes,
  };
};
