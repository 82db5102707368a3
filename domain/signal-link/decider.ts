import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { SignalLinkCommand } from './commands.ts';
import type { SignalLinkEvent } from './events.ts';

/** The slot of an app-messenger's Signal link: the link that holds it, until when, or none. */
export type SignalLinkState = { readonly open: { readonly linkId: string; readonly appMessengerId: string; readonly expiresAt: number } | null };

export const signalLinkStreamName = (appMessengerId: string) => `signallink-${appMessengerId}`;

export const SIGNAL_LINK_ERRORS = {
  pending: 'A link of this Signal bot is already waiting for a phone: scan it, or ask again once it expires',
} as const;

/**
 * One link at a time per app-messenger: a start is refused (`conflict`) while another holds the
 * slot and has not expired; an end frees the slot of its own link only (a link that expired and
 * was replaced ends without a trace).
 */
export const decide = (command: SignalLinkCommand, state: SignalLinkState): Decision<SignalLinkEvent> => {
  switch (command.type) {
    case 'StartSignalLink': {
      const { linkId, appMessengerId, appId, userId, expiresAt, now } = command.data;
      if (state.open !== null && now.getTime() < state.open.expiresAt) return domainError('conflict', SIGNAL_LINK_ERRORS.pending);
      return [{ type: 'SignalLinkStarted', data: { linkId, appMessengerId, appId, userId, expiresAt: expiresAt.toISOString(), startedAt: now.toISOString() } }];
    }
    case 'EndSignalLink': {
      const { linkId, outcome, reason, now } = command.data;
      if (state.open?.linkId !== linkId) return [];
      return [{ type: 'SignalLinkEnded', data: { linkId, appMessengerId: state.open.appMessengerId, outcome, reason, endedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: SignalLinkState, event: SignalLinkEvent): SignalLinkState => {
  switch (event.type) {
    case 'SignalLinkStarted':
      return { open: { linkId: event.data.linkId, appMessengerId: event.data.appMessengerId, expiresAt: Date.parse(event.data.expiresAt) } };
    case 'SignalLinkEnded':
      return state.open?.linkId === event.data.linkId ? { open: null } : state;
    default:
      return assertNever(event);
  }
};

export const signalLinkDecider: Decider<SignalLinkState, SignalLinkCommand, SignalLinkEvent> = { decide, evolve, initialState: () => ({ open: null }) };
