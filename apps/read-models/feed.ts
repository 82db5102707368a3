import { categoryOf, type EventStore, type RecordedEvent } from '../../infra/event-store/port.ts';
import type { Projection } from '../../projections/projection.ts';
import type { Checkpoint } from './snapshots.ts';

/**
 * How read models are fed: every event of their categories, in global order, to each projection
 * that handles its category. The projection runner applies what its subscription delivers;
 * `relay projections rebuild` replays a range of the history the same way.
 */

/** The categories a set of projections reads, each once. */
export const categoriesOf = (projections: readonly Projection[]): string[] => [...new Set(projections.flatMap((p) => p.categories))];

/** Applies one event to the projections that handle its category; returns the checkpoint it reached. */
export const applyEvent = (projections: readonly Projection[], event: RecordedEvent): Checkpoint => {
  const category = categoryOf(event.streamName);
  for (const projection of projections) if (projection.categories.includes(category)) projection.apply(event);
  return { position: event.globalPosition, eventId: event.id };
};

const PAGE = 1000;

/**
 * Reads the projections' categories after `after` up to and including `upTo`, page by page, and
 * applies them. Returns the checkpoint of the last event applied, or undefined when there was none.
 */
export const replayInto = async (
  store: EventStore,
  projections: readonly Projection[],
  range: { after: bigint; upTo: bigint },
): Promise<Checkpoint | undefined> => {
  const categories = categoriesOf(projections);
  let after = range.after;
  let reached: Checkpoint | undefined;
  while (after < range.upTo) {
    const page = await store.readAll({ after, limit: PAGE, filter: { categories } });
    if (page.length === 0) break;
    for (const event of page) {
      if (event.globalPosition > range.upTo) return reached;
      reached = applyEvent(projections, event);
    }
    after = page[page.length - 1]!.globalPosition;
  }
  return reached;
};
