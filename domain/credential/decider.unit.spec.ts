import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import type { CredentialCommand } from './commands.ts';
import { credentialDecider } from './decider.ts';
import type { CredentialEvent } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const spec = deciderSpec(credentialDecider);
type Create = Extract<CredentialCommand, { type: 'CreateCredential' }>['data'];
const create = (overrides: Partial<Create> = {}): CredentialCommand => ({
  type: 'CreateCredential',
  data: {
    credentialId: 'cred_1',
    userId: 'usr_1',
    type: 'api-key',
    name: ' Bot key ',
    appIds: ['app_1', 'app_1'],
    ownedAppIds: ['app_1', 'app_2'],
    liveCredentials: 0,
    maxPerUser: 10,
    keyHash: 'hash',
    secretEncrypted: 'enc',
    keyPreview: 'rly_abcd',
    webhookUrl: null,
    webhookAuthType: null,
    webhookAuthHeaderName: null,
    now,
    ...overrides,
  },
});
const created: CredentialEvent = {
  type: 'CredentialCreated',
  data: {
    credentialId: 'cred_1',
    userId: 'usr_1',
    type: 'api-key',
    name: 'Bot key',
    appIds: ['app_1'],
    keyHash: 'hash',
    secretEncrypted: 'enc',
    keyPreview: 'rly_abcd',
    webhookUrl: null,
    webhookAuthType: null,
    webhookAuthHeaderName: null,
    createdAt: now.toISOString(),
  },
};

describe('credential decider', () => {
  it('creates an api key with de-duplicated appIds and a trimmed name', () => spec.given([]).when(create()).then([created]));

  it('refuses an app the user does not own', () =>
    spec.given([]).when(create({ appIds: ['app_9'] })).thenFails('validation', 'Unknown appId: app_9'));

  it('refuses an empty name', () => spec.given([]).when(create({ name: ' ' })).thenFails('validation', 'Missing required field: name'));

  it('requires a webhook URL for webhook types', () =>
    spec.given([]).when(create({ type: 'webhook-bearer' })).thenFails('validation', 'Missing required field: webhookUrl'));

  it('requires a usable header name for webhook-header and stores it lower-cased', () => {
    spec
      .given([])
      .when(create({ type: 'webhook-header', webhookUrl: 'https://x.test/h' }))
      .thenFails('validation', 'Missing required field: webhookAuthHeaderName');
    spec
      .given([])
      .when(create({ type: 'webhook-header', webhookUrl: 'https://x.test/h', webhookAuthHeaderName: 'Authorization' }))
      .thenFails('validation', 'Invalid webhookAuthHeaderName: must not be a standard HTTP header');
    spec
      .given([])
      .when(create({ type: 'webhook-header', webhookUrl: 'https://x.test/h', webhookAuthHeaderName: 'X-Relay-Key' }))
      .then([
        {
          type: 'CredentialCreated',
          data: {
            ...created.data,
            type: 'webhook-header',
            webhookUrl: 'https://x.test/h',
            webhookAuthType: 'header',
            webhookAuthHeaderName: 'x-relay-key',
          },
        },
      ]);
  });

  it('refuses standard request headers, header families and malformed names as key headers', () => {
    const header = (webhookAuthHeaderName: string) => create({ type: 'webhook-header', webhookUrl: 'https://x.test/h', webhookAuthHeaderName });
    for (const name of ['user-agent', 'User-Agent', 'accept', 'Accept-Language', 'sec-fetch-mode', 'x-forwarded-host', 'content-type', 'x-request-id', 'traceparent'])
      spec.given([]).when(header(name)).thenFails('validation', 'Invalid webhookAuthHeaderName: must not be a standard HTTP header');
    spec.given([]).when(header('x-key\r\nx-evil')).thenFails('validation', 'Invalid webhookAuthHeaderName: must be an HTTP header name');
    spec.given([]).when(header(`x-${'k'.repeat(63)}`)).thenFails('validation', 'Invalid webhookAuthHeaderName: must be at most 64 characters');
  });

  it('caps the live credentials of a user', () =>
    spec.given([]).when(create({ liveCredentials: 10 })).thenFails('limit', 'Credential limit reached: at most 10 per user'));

  it('caps names at 100 characters on one line', () => {
    spec.given([]).when(create({ name: 'k'.repeat(101) })).thenFails('validation', 'Name exceeds 100 character limit');
    spec.given([]).when(create({ name: 'bad\u0000name' })).thenFails('validation', 'Name contains invalid characters');
  });

  it('deletes a live credential of its owner', () =>
    spec
      .given([created])
      .when({ type: 'DeleteCredential', data: { userId: 'usr_1', now } })
      .then([{ type: 'CredentialDeleted', data: { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], deletedAt: now.toISOString() } }]));

  it("does not delete another user's credential, nor twice", () => {
    spec.given([created]).when({ type: 'DeleteCredential', data: { userId: 'usr_2', now } }).thenFails('not_found');
    spec
      .given([created, { type: 'CredentialDeleted', data: { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], deletedAt: now.toISOString() } }])
      .when({ type: 'DeleteCredential', data: { userId: 'usr_1', now } })
      .thenFails('not_found');
  });
});
