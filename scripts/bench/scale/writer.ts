/**
 * How the scale bench writes history in bulk: each command goes through its stream's decider
 * (`decide`, exactly as apps/commands/handle-command.ts does), and the events it decides are
 * appended with the stream's version as the writer knows it (it made the stream, so it does not
 * read it back first) and the data-key changes the application would make in the same append.
 *
 * Unlike handleCommand, the command's time (`now`) is the bench's simulated clock, and the events
 * are recorded at that time (`NewEvent.recordedAt`, the field `relay events copy` uses): a history
 * of a year is written in minutes and still looks like a year to every read model that keeps time
 * windows (the statistics keep the last 25 hours).
 */
import { isDomainError } from '../../../domain/shared/errors.ts';
import type { Decider, DomainEvent } from '../../../domain/shared/decider.ts';
import { newEventId, type EventMetadata, type EventStore, type KeyChanges } from '../../../infra/event-store/port.ts';

/** What the writer needs of a store: appends, the head, and key releases (a poll's). */
export type Writable = Pick<EventStore, 'appendToStream' | 'headPosition'> & { readonly keys: Pick<EventStore['keys'], 'release'> };

export interface Decided<State, Event> {
  readonly events: readonly Event[];
  /** The stream's state after the events. */
  readonly state: State;
  /** The stream's version after the events. */
  readonly version: bigint;
  /** The ids the events were appended with (what a subscriber sees as `recorded.id`). */
  readonly ids: readonly string[];
}

/**
 * Decides `command` on `state` (the stream's state at `version`, initial state and 0n for a new
 * stream) and appends what it decides at `at`. A domain error is a fault of the bench: it throws.
 */
export const decideAndAppend = async <State, Command, Event extends DomainEvent>(
  store: Writable,
  streamName: string,
  decider: Decider<State, Command, Event>,
  command: Command,
  metadata: EventMetadata,
  options: { at: Date; state?: State; version?: bigint; keys?: KeyChanges | ((events: readonly Event[]) => KeyChanges | undefined) },
): Promise<Decided<State, Event>> => {
  const state = options.state ?? decider.initialState();
  const version = options.version ?? 0n;
  const decision = decider.decide(command, state);
  if (isDomainError(decision)) throw new Error(`${streamName}: ${decision.code}: ${decision.message}`);
  if (decision.length === 0) return { events: [], state, version, ids: [] };
  const keys = typeof options.keys === 'function' ? options.keys(decision) : options.keys;
  const ids = decision.map(() => newEventId());
  await store.appendToStream(
    streamName,
    decision.map((e, i) => ({ id: ids[i]!, type: e.type, data: e.data, metadata, recordedAt: options.at })),
    { expectedVersion: version, ...(keys ? { keys } : {}) },
  );
  return { events: decision, state: decision.reduce((s, e) => decider.evolve(s, e), state), version: version + BigInt(decision.length), ids };
};

/** Runs `task` for every item with at most `limit` in flight (appends in flight share group commits). */
export const inPool = async <T>(items: Iterable<T>, limit: number, task: (item: T) => Promise<void>): Promise<void> => {
  const iterator = items[Symbol.iterator]();
  let failure: unknown;
  const worker = async () => {
    for (;;) {
      if (failure !== undefined) return;
      const next = iterator.next();
      if (next.done) return;
      try {
        await task(next.value);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: limit }, worker));
  if (failure !== undefined) throw failure;
};

/**
 * The simulated clock: the history runs from `start` to `end` (a year by default, ending shortly
 * before the run), the population is made at its start.
 */
export class HistoryClock {
  constructor(
    readonly start: number,
    readonly end: number,
  ) {}

  static ending(endMs: number, days: number): HistoryClock {
    return new HistoryClock(endMs - days * 86_400_000, endMs);
  }

  /** The time of the `i`-th of `n` evenly spaced moments of the history. */
  at(i: number, n: number): Date {
    return new Date(Math.round(this.start + ((this.end - this.start) * (i + 0.5)) / Math.max(1, n)));
  }

  /** The population's moment: the history's start, plus `offsetMs`. */
  early(offsetMs: number): Date {
    return new Date(this.start + offsetMs);
  }
}
