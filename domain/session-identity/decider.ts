import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { SessionIdentityCommand } from './commands.ts';
import type { SessionIdentityEvent } from './events.ts';

export const SESSION_IDENTITY_CATEGORY = 'sessionidentity';

/** One stream per Session app-messenger: its bot's identity, written once, and its send clock. */
export const sessionIdentityStreamName = (appMessengerId: string) => `${SESSION_IDENTITY_CATEGORY}-${appMessengerId}`;

export type SessionIdentityState = { status: 'none' } | { status: 'kept'; sessionId: string; secretEncrypted: string; sendClockUpTo: number };

/**
 * An app-messenger keeps the first identity recorded for it: its Session ID is its address, which
 * contacts write to. The same identity again changes nothing; another one is a conflict.
 */
export const decide = (command: SessionIdentityCommand, state: SessionIdentityState): Decision<SessionIdentityEvent> => {
  switch (command.type) {
    case 'KeepSessionIdentity': {
      const { appMessengerId, sessionId, secretEncrypted, origin, now } = command.data;
      if (state.status === 'kept') {
        if (state.sessionId === sessionId) return [];
        return domainError('conflict', `The app-messenger ${appMessengerId} already has the Session identity ${state.sessionId}`);
      }
      return [{ type: 'SessionIdentityKept', data: { appMessengerId, sessionId, secretEncrypted, origin, keptAt: now.toISOString() } }];
    }
    case 'AdvanceSendClock': {
      const { appMessengerId, upTo, now } = command.data;
      if (state.status !== 'kept') return domainError('not_found', `The app-messenger ${appMessengerId} has no Session identity`);
      if (!Number.isSafeInteger(upTo) || upTo <= state.sendClockUpTo) return [];
      return [{ type: 'SessionSendClockAdvanced', data: { appMessengerId, upTo, advancedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: SessionIdentityState, event: SessionIdentityEvent): SessionIdentityState => {
  switch (event.type) {
    case 'SessionIdentityKept':
      return state.status === 'kept' ? state : { status: 'kept', sessionId: event.data.sessionId, secretEncrypted: event.data.secretEncrypted, sendClockUpTo: 0 };
    case 'SessionSendClockAdvanced':
      return state.status === 'kept' ? { ...state, sendClockUpTo: Math.max(state.sendClockUpTo, event.data.upTo) } : state;
    default:
      return assertNever(event);
  }
};

export const initialState = (): SessionIdentityState => ({ status: 'none' });

export const sessionIdentityDecider: Decider<SessionIdentityState, SessionIdentityCommand, SessionIdentityEvent> = { decide, evolve, initialState };
