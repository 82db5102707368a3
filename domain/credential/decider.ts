import { assertNever, type Decider, type Decision } from '../shared/decider.ts';
import { domainError } from '../shared/errors.ts';
import { customHeaderNameProblem } from '../shared/header-names.ts';
import { TEXT_LIMITS, textError, textProblem } from '../shared/text.ts';
import type { CredentialCommand } from './commands.ts';
import type { CredentialEvent, CredentialRecord } from './events.ts';

export type CredentialState =
  | { status: 'none' }
  | { status: 'live'; credential: CredentialRecord }
  | { status: 'deleted'; credentialId: string; userId: string };

export const credentialStreamName = (credentialId: string) => `credential-${credentialId}`;


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
    default:
      return assertNever(command);
  }
};

export const evolve = (state: CredentialState, event: CredentialEvent): CredentialState => {
  switch (event.type) {
    case 'CredentialCreated':
      return { status: 'live', credential: event.data };
    case 'CredentialDeleted':
      return { status: 'deleted', credentialId: event.data.credentialId, userId: event.data.userId };
    default:
      return assertNever(event);
  }
};

export const initialState = (): CredentialState => ({ status: 'none' });

export const credentialDecider: Decider<CredentialState, CredentialCommand, CredentialEvent> = { decide, evolve, initialState };
