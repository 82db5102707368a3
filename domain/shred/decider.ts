import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import type { ShredCommand } from './commands.ts';
import type { ShredEvent } from './events.ts';

/** One stream per sweep of the body shredder: the record of the keys it destroyed, written once. */
export const shredStreamName = (shredId: string) => `shred-${shredId}`;

export type ShredState = { status: 'none' } | { status: 'recorded' };

export const decide = (command: ShredCommand, state: ShredState): Decision<ShredEvent> => {
  switch (command.type) {
    case 'ForgetBodies': {
      const { shredId, keys, now } = command.data;
      if (state.status === 'recorded' || keys.length === 0) return [];
      return [{ type: 'BodiesForgotten', data: { shredId, keys, forgottenAt: now.toISOString() } }];
    }
    default:
      return assertNever(command.type);
  }
};

export const evolve = (_state: ShredState, event: ShredEvent): ShredState => {
  switch (event.type) {
    case 'BodiesForgotten':
      return { status: 'recorded' };
    default:
      return assertNever(event.type);
  }
};

export const initialState = (): ShredState => ({ status: 'none' });

export const shredDecider: Decider<ShredState, ShredCommand, ShredEvent> = { decide, evolve, initialState };
