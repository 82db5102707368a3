import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import { customHeaderNameProblem } from '../shared/header-names.ts';
import { TEXT_LIMITS, textError, textProblem } from '../shared/text.ts';
import type { CredentialCommand } from './commands.ts';
import { CREDENTIAL_USE_INTERVAL_MS, ROLL_OVERLAP_MAX_MS, type CredentialEvent, type CredentialRecord } from './events.ts';

export type CredentialState =
  | { status: 'none' }
  /** `credential` holds the current key (after the last roll); `lastUsedAt` the last recorded use. */
  | { status: 'live'; credential: CredentialRecord; lastUsedAt: string | null }
  | { status: 'deleted'; credentialId: string; userId: string };

export const credentialStreamName = (credentialId: string) => `credential-${credentialId}`;

/** A span in words, in its largest whole unit: `1 hour`, `7 days`, `90 seconds`. */
export const spanInWords = (ms: number): string => {
  for (const [unit, size] of [['day', 86_400_000], ['hour', 3_600_000], ['minute', 60_000]] as const)
    if (ms >= size && ms % size === 0) return `${ms / size} ${unit}${ms === size ? '' : 's'}`;
  const seconds = Math.round(ms / 1000);
  return `${seconds} second${seconds === 1 ? '' : 's'}`;
};

export const decide = (command: CredentialCommand, state: CredentialState): Decision<CredentialEvent> => {
  switch (command.type) {
    case 'CreateCredential': {
      if (state.status !== 'none') return domainError('conflict', 'Credential already exists');
      const { ownedAppIds, liveCredentials, maxPerUser, now, ...data } = command.data;
      const name = data.name.trim();
      if (name === '') return domainError('validation', 'Missing required field: name');
      const nameProblem = textProblem(name, TEXT_LIMITS.name, true);
      if (nameProblem) return domainError('validation', textError('Name', nameProblem, TEXT_LIMITS.name));
      if (liveCredentials >= maxPerUser) return domainError('limit', `Credential limit reached: at most ${maxPerUser} per user`);
      const appIds = [...new Set(data.appIds)];
      const foreign = appIds.find((appId) => !ownedAppIds.includes(appId));
      if (foreign !== undefined) return domainError('validation', `Unknown appId: ${foreign}`);
      if (data.type !== 'api-key' && data.webhookUrl === null)
        return domainError('validation', 'Missing required field: webhookUrl');
      let webhookAuthHeaderName: string | null = null;
      if (data.type === 'webhook-header') {
        const header = data.webhookAuthHeaderName?.trim() ?? '';
        if (header === '') return domainError('validation', 'Missing required field: webhookAuthHeaderName');
        const headerProblem = customHeaderNameProblem(header);
        if (headerProblem) return domainError('validation', `Invalid webhookAuthHeaderName: ${headerProblem}`);
        webhookAuthHeaderName = header.toLowerCase();
      }
      return [
        {
          type: 'CredentialCreated',
          data: {
            ...data,
            name,
            appIds,
            webhookUrl: data.type === 'api-key' ? null : data.webhookUrl,
            webhookAuthType: data.type === 'api-key' ? null : (data.webhookAuthType ?? (data.type === 'webhook-bearer' ? 'bearer' : 'header')),
            webhookAuthHeaderName,
            createdAt: now.toISOString(),
          },
        },
      ];
    }
    case 'DeleteCredential': {
      if (state.status !== 'live' || state.credential.userId !== command.data.userId)
        return domainError('not_found', 'Credential not found');
      return [
        {
          type: 'CredentialDeleted',
          data: {
            credentialId: state.credential.credentialId,
            userId: state.credential.userId,
            appIds: [...state.credential.appIds],
            deletedAt: command.data.now.toISOString(),
          },
        },
      ];
    }
    case 'RollCredential': {
      const { userId, keyHash, secretEncrypted, keyPreview, overlapMs, minOverlapMs, now } = command.data;
      if (state.status !== 'live' || state.credential.userId !== userId) return domainError('not_found', 'Credential not found');
      if (!Number.isInteger(overlapMs) || overlapMs < minOverlapMs || overlapMs > ROLL_OVERLAP_MAX_MS)
        return domainError('validation', `Invalid overlapSeconds: must be from ${spanInWords(minOverlapMs)} to ${spanInWords(ROLL_OVERLAP_MAX_MS)}`);
      if (keyHash === state.credential.keyHash) return domainError('conflict', 'The new key is the current one');
      const { credentialId, appIds } = state.credential;
      return [
        {
          type: 'CredentialRolled',
          data: {
            credentialId,
            userId,
            appIds: [...appIds],
            keyHash,
            secretEncrypted,
            keyPreview,
            previousKeyUntil: new Date(now.getTime() + overlapMs).toISOString(),
            rolledAt: now.toISOString(),
          },
        },
      ];
    }
    case 'RecordCredentialUse': {
      if (state.status !== 'live') return [];
      const usedAt = command.data.usedAt.getTime();
      if (state.lastUsedAt !== null && usedAt - Date.parse(state.lastUsedAt) < CREDENTIAL_USE_INTERVAL_MS) return [];
      const { credentialId, userId, appIds } = state.credential;
      return [{ type: 'CredentialUsed', data: { credentialId, userId, appIds: [...appIds], usedAt: command.data.usedAt.toISOString() } }];
    }
    default:
      return assertNever(command);
  }
};

export const evolve = (state: CredentialState, event: CredentialEvent): CredentialState => {
  switch (event.type) {
    case 'CredentialCreated':
      return { status: 'live', credential: event.data, lastUsedAt: null };
    case 'CredentialDeleted':
      return { status: 'deleted', credentialId: event.data.credentialId, userId: event.data.userId };
    case 'CredentialRolled': {
      if (state.status !== 'live') return state;
      const { keyHash, secretEncrypted, keyPreview } = event.data;
      return { ...state, credential: { ...state.credential, keyHash, secretEncrypted, keyPreview } };
    }
    case 'CredentialUsed':
      return state.status === 'live' ? { ...state, lastUsedAt: event.data.usedAt } : state;
    default:
      return assertNever(event);
  }
};

export const initialState = (): CredentialState => ({ status: 'none' });

export const credentialDecider: Decider<CredentialState, CredentialCommand, CredentialEvent> = { decide, evolve, initialState };
