import type { Decider, DomainEvent } from '../../domain/shared/decider.ts';
import { isDomainError, type DomainError } from '../../domain/shared/errors.ts';
import { ExpectedVersionConflictError, type EventMetadata, type EventStore, type KeyChanges } from '../../infra/event-store/port.ts';

export type HandleResult<Event> =
  | { ok: true; events: readonly Event[]; position: bigint | undefined }
  | { ok: false; error: DomainError };

const MAX_TRIES = 5;

export interface HandleOptions<Event = DomainEvent> {
  /**
   * The stream is new (its id was made for this command): decide on the initial state without
   * reading it, and append expecting no stream. If it exists after all, the conflict makes the
   * next try read it as usual.
   */
  readonly newStream?: boolean;
  /**
   * Data-key changes to make in the same transaction as the append (docs/privacy.md): given, or
   * derived from the events decided (a final delivery outcome releases its key). Nothing is
   * changed when nothing is appended.
   */
  readonly keys?: KeyChanges | ((events: readonly Event[]) => KeyChanges | undefined);
}

/**
 * Read the stream, fold it, decide, append with the version read (optimistic concurrency).
 * On a version conflict it tries again with fresh state (at most 5 times, then it throws);
 * nothing to append means nothing happens. Every write of Relay goes through here.
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
  options: HandleOptions<Event> = {},
): Promise<HandleResult<Event>> => {
  for (let attempt = 1; ; attempt++) {
    const { version, events } = attempt === 1 && options.newStream ? { version: 0n, events: [] } : await store.readStream(streamName);
    const state = events.reduce((s, e) => decider.evolve(s, e as unknown as Event), decider.initialState());
    const built = typeof command === 'function' ? await (command as (s: State) => Command | undefined | Promise<Command | undefined>)(state) : command;
    if (built === undefined) return { ok: true, events: [], position: undefined };
    const decision = decider.decide(built, state);
    if (isDomainError(decision)) return { ok: false, error: decision };
    if (decision.length === 0) return { ok: true, events: [], position: undefined };
    try {
      const keys = typeof options.keys === 'function' ? options.keys(decision) : options.keys;
      const result = await store.appendToStream(
        streamName,
        decision.map((e) => ({ type: e.type, data: e.data, metadata })),
        { expectedVersion: version, ...(keys ? { keys } : {}) },
      );
      return { ok: true, events: decision, position: result.lastPosition };
    } catch (error) {
      if (!(error instanceof ExpectedVersionConflictError) || attempt >= MAX_TRIES) throw error;
    }
  }
};
