import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { UserCommand } from './commands.ts';
import type { SendTier, UserEvent } from './events.ts';

export type UserState =
  | { status: 'none' }
  | { status: 'registered'; userId: string; email: string; name: string; tier: SendTier };

export const userStreamName = (userId: string) => `user-${userId}`;

const notRegistered = domainError('not_found', 'User not found');

export const decide = (command: UserCommand, state: UserState): Decision<UserEvent> => {
  switch (command.type) {
    case 'RegisterUser': {
      if (state.status === 'registered') return [];
      const { userId, email, name, now } = command.data;
      return [{ type: 'UserRegistered', data: { userId, email, name, registeredAt: now.toISOString() } }];
    }
    case 'RenameUser': {
      if (state.status !== 'registered') return notRegistered;
      const name = command.data.name.trim();
      if (name === '') return domainError('validation', 'Name is required');
      if (name === state.name) return [];
      return [{ type: 'UserRenamed', data: { userId: state.userId, name, renamedAt: command.data.now.toISOString() } }];
    }
    case 'StartSession': {
      if (state.status !== 'registered') return notRegistered;
      const { sessionId, tokenHash, expiresAt, now } = command.data;
      return [
        {
          type: 'SessionStarted',
          data: {
            userId: state.userId,
            sessionId,
            tokenHash,
            startedAt: now.toISOString(),
            expiresAt: expiresAt.toISOString(),
          },
        },
      ];
    }
    case 'ChangeSendTier': {
      if (state.status !== 'registered') return notRegistered;
      if (state.tier === command.data.tier) return [];
      return [
        {
          type: 'SendTierChanged',
          data: { userId: state.userId, tier: command.data.tier, changedAt: command.data.now.toISOString() },
        },
      ];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: UserState, event: UserEvent): UserState => {
  switch (event.type) {
    case 'UserRegistered':
      return { status: 'registered', userId: event.data.userId, email: event.data.email, name: event.data.name, tier: 'free' };
    case 'UserRenamed':
      return state.status === 'registered' ? { ...state, name: event.data.name } : state;
    case 'SessionStarted':
      return state;
    case 'SendTierChanged':
      return state.status === 'registered' ? { ...state, tier: event.data.tier } : state;
    default:
      return assertNever(event);
  }
};

export const initialState = (): UserState => ({ status: 'none' });

export const userDecider: Decider<UserState, UserCommand, UserEvent> = { decide, evolve, initialState };
