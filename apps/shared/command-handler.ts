import type { Decider, DomainEvent } from '../../domain/shared/decider.ts';
import { isDomainError, type DomainError } from '../../domain/shared/errors.ts';
import {
  ExpectedVersionConflictError,
  type EventMetadata,
  type EventStore,
} from '../../infra/event-store/port.ts';

export type HandleResult<Event> =
  | { ok: true; events: readonly Event[]; position: bigint | undefined }
  | { ok: false; error: DomainError };

const MAX_TRIES = 5;

/**
 * Read the stream, fold it, decide, append with the version read (optimistic concurrency).
 * On a version conflict it tries again with fresh state (at most 5 times, then it throws);
 * nothing to append means nothing happens.
 */
export const handleCommand = async <State, Command, Event extends DomainEvent>(
  store: EventStore,
  streamName: string,
  decider: Decider<State, Command, Event>,
  /**
   * The command, or a function of the current state that builds it (it may do I/O first, and
   * returns undefined when there is nothing to do). On a version conflict it runs again on the
   * fresh state.
   */
  command: Command | ((state: State) => Command | undefined | Promise<Command | undefined>),
  metadata: EventMetadata,
): Promise<HandleResult<Event>> => {
  for (let attempt = 1; ; attempt++) {
    const { version, events } = await store.readStream(streamName);
    const state = events.reduce((s, e) => decider.evolve(s, e as unknown as Event), decider.initialState());
    const built = typeof command === 'function' ? await (command as (s: State) => Command | undefined | Promise<Command | undefined>)(state) : command;
    if (built === undefined) return { ok: true, events: [], position: undefined };
    const decision = decider.decide(built, state);
    if (isDomainError(decision)) return { ok: false, error: decision };
    if (decision.length === 0) return { ok: true, events: [], position: undefined };
    try {
      const result = await store.appendToStream(
        streamName,
        decision.map((e) => ({ type: e.type, data: e.data, metadata })),
        { expectedVersion: version },
      );
      return { ok: true, events: decision, position: result.lastPosition };
    } catch (error) {
      if (!(error instanceof ExpectedVersionConflictError) || attempt >= MAX_TRIES) throw error;
    }
  }
};
