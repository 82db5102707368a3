import { expect } from 'vitest';
import type { Decider, DomainEvent } from '../../domain/shared/decider.ts';
import { isDomainError, type DomainErrorCode } from '../../domain/shared/errors.ts';

/**
 * given(events).when(command).then(events) / thenFails(code) / thenNothingHappens():
 * pure decider tests, no I/O.
 */
export const deciderSpec = <State, Command, Event extends DomainEvent>(decider: Decider<State, Command, Event>) => ({
  given: (events: readonly Event[]) => ({
    when: (command: Command) => {
      const state = events.reduce(decider.evolve, decider.initialState());
      const result = decider.decide(command, state);
      return {
        then: (expected: readonly Event[]) => {
          expect(isDomainError(result), `expected events, got ${JSON.stringify(result)}`).toBe(false);
          expect(result).toEqual(expected);
        },
        thenFails: (code: DomainErrorCode, message?: string) => {
          expect(isDomainError(result), `expected a domain error, got ${JSON.stringify(result)}`).toBe(true);
          expect(result).toMatchObject(message === undefined ? { code } : { code, message });
        },
        thenNothingHappens: () => expect(result).toEqual([]),
      };
    },
  }),
});
