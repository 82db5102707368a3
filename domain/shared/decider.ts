/**
 * The decider pattern: `decide(command, state)` returns the events a command causes (or a domain
 * error value), `evolve(state, event)` folds one event into the state, `initialState()` is the
 * state of a stream with no events. Pure: ids, time and the actor come in with the command.
 */
import type { DomainError } from './errors.ts';

export interface DomainEvent<Type extends string = string, Data = unknown> {
  readonly type: Type;
  readonly data: Data;
}

export type Decision<Event> = readonly Event[] | DomainError;

export interface Decider<State, Command, Event extends DomainEvent> {
  decide(command: Command, state: State): Decision<Event>;
  evolve(state: State, event: Event): State;
  initialState(): State;
}

export const fold = <State, Event extends DomainEvent>(
  decider: Pick<Decider<State, never, Event>, 'evolve' | 'initialState'>,
  events: readonly Event[],
): State => events.reduce(decider.evolve, decider.initialState());

/** Exhaustiveness check for `switch` statements over event and command types. */
export const assertNever = (value: never): never => {
  throw new Error(`Unexpected value: ${JSON.stringify(value)}`);
};
