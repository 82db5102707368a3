import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import type { Messenger } from '../shared/messengers.ts';
import { customHeaderNameProblem } from '../shared/header-names.ts';
import { TEXT_LIMITS, textError, textProblem } from '../shared/text.ts';
import type { SigningSecretOffer, AppCommand, AppMessengerIds } from './commands.ts';
import type { AppEvent, AppMessengerHealth, AppMessengerStatus, AppSettings } from './events.ts';

export interface AppMessengerState {
  id: string;
  messenger: Messenger;
  status: AppMessengerStatus;
  address: string | null;
  /** The status the owner asked for while the identity was still being provisioned. */
  requested: 'active' | 'disabled';
  health: AppMessengerHealth;
}

export type AppState =
  | { status: 'none' }
  | { status: 'deleted'; appId: string; userId: string }
  | { status: 'live'; appId: string; userId: string; settings: AppSettings; messengers: AppMessengerState[] };

export const appStreamName = (appId: string) => `app-${appId}`;

const appNotFound = domainError('not_found', 'App not found');

const addedMessengers = (
  appId: string,
  existing: readonly Messenger[],
  protocol: readonly Messenger[],
  ids: AppMessengerIds,
  now: Date,
): AppEvent[] =>
  [...new Set(protocol)]
    .filter((messenger) => !existing.includes(messenger))
    .map((messenger) => ({
      type: 'AppMessengerAdded' as const,
      data: { appId, appMessengerId: ids[messenger], messenger, status: 'processing' as const, addedAt: now.toISOString() },
    }));

const validateSettings = (settings: Partial<AppSettings>) => {
  if (settings.name !== undefined) {
    const name = settings.name.trim();
    if (name === '') return domainError('validation', 'Name is required');
    const problem = textProblem(name, TEXT_LIMITS.name, true);
    if (problem) return domainError('validation', textError('Name', problem, TEXT_LIMITS.name));
  }
  if (settings.protocol !== undefined && settings.protocol.length === 0)
    return domainError('validation', 'Protocol must name at least one messenger');
  if (settings.webhookAuthHeaderName) {
    const problem = customHeaderNameProblem(settings.webhookAuthHeaderName);
    if (problem) return domainError('validation', `Invalid webhookAuthHeaderName: ${problem}`);
  }
  return undefined;
};

/** Delivery by webhook needs somewhere to deliver to. */
const webhookProblem = (settings: AppSettings) =>
  settings.deliveryType === 'webhook' && !settings.webhookUrl ? domainError('validation', 'webhookUrl is required when deliveryType is webhook') : undefined;

/**
 * The signing-secret fields a change adds: the offered secret when the app is (or becomes)
 * delivered by webhook without one, or when its owner rotates it (the one it replaces then signs
 * beside it for the overlap).
 */
const signingSecretChanges = (before: Partial<AppSettings>, after: Partial<AppSettings>, offer: SigningSecretOffer, now: Date): Partial<AppSettings> => {
  const current = before.webhookSigningSecretEncrypted ?? null;
  if (offer.rotate && current !== null)
    return {
      webhookSigningSecretEncrypted: offer.encrypted,
      webhookPreviousSigningSecretEncrypted: current,
      webhookPreviousSigningSecretUntil: new Date(now.getTime() + offer.overlapMs).toISOString(),
    };
  if (current === null && (offer.rotate || after.deliveryType === 'webhook')) return { webhookSigningSecretEncrypted: offer.encrypted };
  return {};
};

export const decide = (command: AppCommand, state: AppState): Decision<AppEvent> => {
  switch (command.type) {
    case 'CreateApp': {
      if (state.status !== 'none') return domainError('conflict', 'App already exists');
      const { appId, userId, settings, appMessengerIds, liveApps, maxPerUser, signingSecret, now } = command.data;
      if (liveApps >= maxPerUser) return domainError('limit', `App limit reached: at most ${maxPerUser} per user`);
      const invalid = validateSettings(settings) ?? webhookProblem(settings);
      if (invalid) return invalid;
      const protocol = [...new Set(settings.protocol)];
      const signing = signingSecretChanges({}, settings, { ...signingSecret, rotate: false }, now);
      return [
        { type: 'AppCreated', data: { ...settings, ...signing, name: settings.name.trim(), protocol, appId, userId, createdAt: now.toISOString() } },
        ...addedMessengers(appId, [], protocol, appMessengerIds, now),
      ];
    }
    case 'UpdateApp': {
      if (state.status !== 'live' || state.userId !== command.data.userId) return appNotFound;
      const { changes, appMessengerIds, signingSecret, now } = command.data;
      const invalid = validateSettings(changes) ?? webhookProblem({ ...state.settings, ...changes });
      if (invalid) return invalid;
      const normalised: Partial<AppSettings> = { ...changes, ...signingSecretChanges(state.settings, { ...state.settings, ...changes }, signingSecret, now) };
      if (changes.name !== undefined) normalised.name = changes.name.trim();
      if (changes.protocol !== undefined) normalised.protocol = [...new Set(changes.protocol)];
      const existing = state.messengers.map((m) => m.messenger);
      return [
        { type: 'AppUpdated', data: { appId: state.appId, changes: normalised, updatedAt: now.toISOString() } },
        ...(normalised.protocol ? addedMessengers(state.appId, existing, normalised.protocol, appMessengerIds, now) : []),
      ];
    }
    case 'DeleteApp': {
      if (state.status !== 'live' || state.userId !== command.data.userId) return appNotFound;
      return [{ type: 'AppDeleted', data: { appId: state.appId, userId: state.userId, deletedAt: command.data.now.toISOString() } }];
    }
    case 'RequestWebhookRetry': {
      if (state.status !== 'live' || state.userId !== command.data.userId) return appNotFound;
      if (state.settings.deliveryType !== 'webhook') return domainError('validation', 'This app is not delivered by webhook');
      return [{ type: 'AppWebhookRetryRequested', data: { appId: state.appId, userId: state.userId, requestedAt: command.data.now.toISOString() } }];
    }
    case 'ProvisionAppMessenger': {
      if (state.status !== 'live') return appNotFound;
      const { appMessengerId, address, now } = command.data;
      const target = state.messengers.find((m) => m.id === appMessengerId);
      if (!target) return domainError('not_found', 'App messenger not found');
      if (target.address !== null) return [];
      const events: AppEvent[] = [
        { type: 'AppMessengerProvisioned', data: { appId: state.appId, appMessengerId, address, provisionedAt: now.toISOString() } },
        {
          type: 'AppMessengerStatusChanged',
          data: { appId: state.appId, appMessengerId, status: target.requested, changedAt: now.toISOString() },
        },
      ];
      return events;
    }
    case 'RecordAppMessengerHealth': {
      if (state.status !== 'live') return appNotFound;
      const { appMessengerId, health, reason, now } = command.data;
      const target = state.messengers.find((m) => m.id === appMessengerId);
      if (!target) return domainError('not_found', 'App messenger not found');
      if (target.health === health) return [];
      return [{ type: 'AppMessengerHealthChanged', data: { appId: state.appId, appMessengerId, health, reason: health === 'ok' ? null : reason, changedAt: now.toISOString() } }];
    }
    case 'ChangeAppMessengerStatus': {
      if (state.status !== 'live' || state.userId !== command.data.userId) return domainError('not_found', 'App messenger not found');
      const { appMessengerId, status, now } = command.data;
      const target = state.messengers.find((m) => m.id === appMessengerId);
      if (!target) return domainError('not_found', 'App messenger not found');
      if (target.status === 'processing') {
        // Still being provisioned: remember the wish, applied once the identity exists.
        if (target.requested === status) return [];
        return [{ type: 'AppMessengerStatusChanged', data: { appId: state.appId, appMessengerId, status, changedAt: now.toISOString() } }];
      }
      if (target.status === status) return [];
      return [{ type: 'AppMessengerStatusChanged', data: { appId: state.appId, appMessengerId, status, changedAt: now.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: AppState, event: AppEvent): AppState => {
  switch (event.type) {
    case 'AppCreated': {
      const { appId, userId, createdAt: _createdAt, ...settings } = event.data;
      return { status: 'live', appId, userId, settings, messengers: [] };
    }
    case 'AppUpdated':
      return state.status === 'live' ? { ...state, settings: { ...state.settings, ...event.data.changes } } : state;
    case 'AppDeleted':
      return state.status === 'live' ? { status: 'deleted', appId: state.appId, userId: state.userId } : state;
    case 'AppWebhookRetryRequested':
      return state;
    case 'AppMessengerAdded':
      if (state.status !== 'live') return state;
      return {
        ...state,
        messengers: [
          ...state.messengers,
          { id: event.data.appMessengerId, messenger: event.data.messenger, status: 'processing', address: null, requested: 'active', health: 'ok' },
        ],
      };
    case 'AppMessengerProvisioned':
      if (state.status !== 'live') return state;
      return {
        ...state,
        messengers: state.messengers.map((m) => (m.id === event.data.appMessengerId ? { ...m, address: event.data.address } : m)),
      };
    case 'AppMessengerStatusChanged':
      if (state.status !== 'live') return state;
      return {
        ...state,
        messengers: state.messengers.map((m) =>
          m.id !== event.data.appMessengerId
            ? m
            : m.address === null
              ? { ...m, requested: event.data.status }
              : { ...m, status: event.data.status, requested: event.data.status },
        ),
      };
    case 'AppMessengerHealthChanged':
      if (state.status !== 'live') return state;
      return { ...state, messengers: state.messengers.map((m) => (m.id === event.data.appMessengerId ? { ...m, health: event.data.health } : m)) };
    default:
      return assertNever(event);
  }
};

export const initialState = (): AppState => ({ status: 'none' });

export const appDecider: Decider<AppState, AppCommand, AppEvent> = { decide, evolve, initialState };
