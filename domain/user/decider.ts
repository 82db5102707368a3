import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import { TEXT_LIMITS, textError, textProblem } from '../shared/text.ts';
import type { UserCommand } from './commands.ts';
import type { SendTier, SubscriptionPeriod, UserEvent } from './events.ts';
import { defaultPreferences, samePreferences, type NotificationPreferences } from './notification-preferences.ts';

/** Live dashboard sessions a user may hold; starting one more ends the oldest (`replaced`). */
export const MAX_LIVE_SESSIONS = 20;

/** Messenger contacts one user may link. */
export const MAX_LINKED_CONTACTS = 10;

export interface LinkedContactState {
  contactLinkId: string;
  contactRef: string;
  keyId: string;
}

export interface SubscriptionState {
  /** Epoch ms; 0 when nothing was ever paid. */
  paidUntil: number;
  /** The invoices that bought it: each counts once. */
  invoiceIds: readonly string[];
}

/** How long a period of the paid tier lasts. */
export const PERIOD_MS: Record<SubscriptionPeriod, number> = { monthly: 30 * 86_400_000, annual: 365 * 86_400_000 };

export interface SessionState {
  sessionId: string;
  /** Epoch ms. */
  startedAt: number;
  expiresAt: number;
}

export type UserState =
  | { status: 'none' }
  | { status: 'registered'; userId: string; email: string; name: string; tier: SendTier; sessions: SessionState[]; recoveryCodeHash: string | null; preferences: NotificationPreferences; contacts: LinkedContactState[]; subscription: SubscriptionState };

export const userStreamName = (userId: string) => `user-${userId}`;

const notRegistered = domainError('not_found', 'User not found');

/** What a recovery that does not sign in is told, whatever the reason. */
export const RECOVERY_REFUSED = 'Invalid email or recovery code';

/** A user's name: one line, 1 to 100 characters after trimming. */
export const nameError = (name: string): string | undefined => {
  const trimmed = name.trim();
  if (trimmed === '') return 'Name is required';
  const problem = textProblem(trimmed, TEXT_LIMITS.name, true);
  return problem && textError('Name', problem, TEXT_LIMITS.name);
};

const live = (sessions: readonly SessionState[], now: Date) => sessions.filter((s) => s.expiresAt > now.getTime());

export const decide = (command: UserCommand, state: UserState): Decision<UserEvent> => {
  switch (command.type) {
    case 'RegisterUser': {
      if (state.status === 'registered') return [];
      const { userId, email, name, now } = command.data;
      const invalid = nameError(name);
      if (invalid) return domainError('validation', invalid);
      return [{ type: 'UserRegistered', data: { userId, email, name: name.trim(), registeredAt: now.toISOString() } }];
    }
    case 'RenameUser': {
      if (state.status !== 'registered') return notRegistered;
      const invalid = nameError(command.data.name);
      if (invalid) return domainError('validation', invalid);
      const name = command.data.name.trim();
      if (name === state.name) return [];
      return [{ type: 'UserRenamed', data: { userId: state.userId, name, renamedAt: command.data.now.toISOString() } }];
    }
    case 'StartSession': {
      if (state.status !== 'registered') return notRegistered;
      const { sessionId, tokenHash, expiresAt, now } = command.data;
      const at = now.toISOString();
      const current = live(state.sessions, now);
      const replaced = current
        .slice()
        .sort((a, b) => a.startedAt - b.startedAt)
        .slice(0, Math.max(0, current.length - MAX_LIVE_SESSIONS + 1));
      return [
        ...replaced.map(
          (s): UserEvent => ({ type: 'SessionEnded', data: { userId: state.userId, sessionId: s.sessionId, reason: 'replaced', endedAt: at } }),
        ),
        { type: 'SessionStarted', data: { userId: state.userId, sessionId, tokenHash, startedAt: at, expiresAt: expiresAt.toISOString() } },
      ];
    }
    case 'EndSession': {
      if (state.status !== 'registered') return notRegistered;
      const { sessionId, reason, now } = command.data;
      const session = state.sessions.find((s) => s.sessionId === sessionId);
      if (!session) return domainError('not_found', 'Session not found');
      // An expired session has ended already: nothing to record.
      if (session.expiresAt <= now.getTime()) return [];
      return [{ type: 'SessionEnded', data: { userId: state.userId, sessionId, reason, endedAt: now.toISOString() } }];
    }
    case 'EndAllSessions': {
      if (state.status !== 'registered') return notRegistered;
      const { reason, now } = command.data;
      return live(state.sessions, now).map((s) => ({
        type: 'SessionEnded',
        data: { userId: state.userId, sessionId: s.sessionId, reason, endedAt: now.toISOString() },
      }));
    }
    case 'ChangeSendTier': {
      if (state.status !== 'registered') return notRegistered;
      if (state.tier === command.data.tier) return [];
      return [{ type: 'SendTierChanged', data: { userId: state.userId, tier: command.data.tier, changedAt: command.data.now.toISOString() } }];
    }
    case 'GenerateRecoveryCode': {
      if (state.status !== 'registered') return notRegistered;
      return [{ type: 'RecoveryCodeGenerated', data: { userId: state.userId, codeHash: command.data.codeHash, generatedAt: command.data.now.toISOString() } }];
    }
    case 'UseRecoveryCode': {
      // The same answer for an unknown user, no code, a wrong one or one used before.
      if (state.status !== 'registered' || state.recoveryCodeHash === null || state.recoveryCodeHash !== command.data.codeHash) return domainError('forbidden', RECOVERY_REFUSED);
      return [{ type: 'RecoveryCodeUsed', data: { userId: state.userId, usedAt: command.data.now.toISOString() } }];
    }
    case 'SetNotificationPreferences': {
      if (state.status !== 'registered') return notRegistered;
      if (samePreferences(state.preferences, command.data.preferences)) return [];
      return [{ type: 'NotificationPreferencesChanged', data: { userId: state.userId, preferences: command.data.preferences, changedAt: command.data.now.toISOString() } }];
    }
    case 'LinkMessengerContact': {
      if (state.status !== 'registered') return notRegistered;
      const { contactLinkId, messenger, contactRef, keyId, sealedContact, now } = command.data;
      // The same code seen again, or a contact linked before: nothing changes.
      if (state.contacts.some((c) => c.contactLinkId === contactLinkId || c.contactRef === contactRef)) return [];
      if (state.contacts.length >= MAX_LINKED_CONTACTS) return domainError('limit', `Contact limit reached: at most ${MAX_LINKED_CONTACTS} per user`);
      return [{ type: 'MessengerContactLinked', data: { userId: state.userId, contactLinkId, messenger, contactRef, keyId, sealedContact, linkedAt: now.toISOString() } }];
    }
    case 'UnlinkMessengerContact': {
      if (state.status !== 'registered') return notRegistered;
      const contact = state.contacts.find((c) => c.contactLinkId === command.data.contactLinkId);
      if (!contact) return domainError('not_found', 'Contact not found');
      return [{ type: 'MessengerContactUnlinked', data: { userId: state.userId, contactLinkId: contact.contactLinkId, keyId: contact.keyId, unlinkedAt: command.data.now.toISOString() } }];
    }
    case 'ExtendSubscription': {
      if (state.status !== 'registered') return notRegistered;
      const { invoiceId, period, now } = command.data;
      if (state.subscription.invoiceIds.includes(invoiceId)) return [];
      const paidFrom = Math.max(now.getTime(), state.subscription.paidUntil);
      return [
        {
          type: 'SubscriptionExtended',
          data: { userId: state.userId, invoiceId, period, paidFrom: new Date(paidFrom).toISOString(), paidUntil: new Date(paidFrom + PERIOD_MS[period]).toISOString(), extendedAt: now.toISOString() },
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
      return { status: 'registered', userId: event.data.userId, email: event.data.email, name: event.data.name, tier: 'free', sessions: [], recoveryCodeHash: null, preferences: defaultPreferences(), contacts: [], subscription: { paidUntil: 0, invoiceIds: [] } };
    case 'UserRenamed':
      return state.status === 'registered' ? { ...state, name: event.data.name } : state;
    case 'SessionStarted': {
      if (state.status !== 'registered') return state;
      const startedAt = Date.parse(event.data.startedAt);
      // Sessions expired before this one started are of no use to any decision: dropped, so the state stays small.
      const kept = state.sessions.filter((s) => s.expiresAt > startedAt);
      return { ...state, sessions: [...kept, { sessionId: event.data.sessionId, startedAt, expiresAt: Date.parse(event.data.expiresAt) }] };
    }
    case 'SessionEnded':
      return state.status === 'registered' ? { ...state, sessions: state.sessions.filter((s) => s.sessionId !== event.data.sessionId) } : state;
    case 'SendTierChanged':
      return state.status === 'registered' ? { ...state, tier: event.data.tier } : state;
    case 'RecoveryCodeGenerated':
      return state.status === 'registered' ? { ...state, recoveryCodeHash: event.data.codeHash } : state;
    case 'RecoveryCodeUsed':
      return state.status === 'registered' ? { ...state, recoveryCodeHash: null } : state;
    case 'NotificationPreferencesChanged':
      return state.status === 'registered' ? { ...state, preferences: event.data.preferences } : state;
    case 'MessengerContactLinked': {
      if (state.status !== 'registered') return state;
      const { contactLinkId, contactRef, keyId } = event.data;
      return { ...state, contacts: [...state.contacts, { contactLinkId, contactRef, keyId }] };
    }
    case 'SubscriptionExtended':
      return state.status === 'registered'
        ? { ...state, subscription: { paidUntil: Date.parse(event.data.paidUntil), invoiceIds: [...state.subscription.invoiceIds, event.data.invoiceId] } }
        : state;
    case 'MessengerContactUnlinked':
      return state.status === 'registered' ? { ...state, contacts: state.contacts.filter((c) => c.contactLinkId !== event.data.contactLinkId) } : state;
    default:
      return assertNever(event);
  }
};

export const initialState = (): UserState => ({ status: 'none' });

export const userDecider: Decider<UserState, UserCommand, UserEvent> = { decide, evolve, initialState };
