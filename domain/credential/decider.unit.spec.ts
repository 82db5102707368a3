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

  describe('rolling a key', () => {
    const hour = 3_600_000;
    const roll = (overrides: Partial<Extract<CredentialCommand, { type: 'RollCredential' }>['data']> = {}): CredentialCommand => ({
      type: 'RollCredential',
      data: { userId: 'usr_1', keyHash: 'hash2', secretEncrypted: 'enc2', keyPreview: 'rly_efgh', overlapMs: 24 * hour, minOverlapMs: hour, now, ...overrides },
    });
    const rolled: CredentialEvent = {
      type: 'CredentialRolled',
      data: {
        credentialId: 'cred_1',
        userId: 'usr_1',
        appIds: ['app_1'],
        keyHash: 'hash2',
        secretEncrypted: 'enc2',
        keyPreview: 'rly_efgh',
        previousKeyUntil: '2026-01-03T03:04:05.000Z',
        rolledAt: now.toISOString(),
      },
    };

    it('gives the same credential a new key, the old one working until the overlap ends', () => spec.given([created]).when(roll()).then([rolled]));

    it('takes overlaps from the least allowed to 7 days, no more, no less', () => {
      spec.given([created]).when(roll({ overlapMs: 7 * 24 * hour + 1000 })).thenFails('validation', 'Invalid overlapSeconds: must be from 1 hour to 7 days');
      spec.given([created]).when(roll({ overlapMs: hour - 1000 })).thenFails('validation', 'Invalid overlapSeconds: must be from 1 hour to 7 days');
      spec.given([created]).when(roll({ overlapMs: 1.5 })).thenFails('validation');
      spec.given([created]).when(roll({ overlapMs: 2000, minOverlapMs: 1000 })).then([{ ...rolled, data: { ...rolled.data, previousKeyUntil: '2026-01-02T03:04:07.000Z' } }]);
    });

    it("does not roll another user's key, a deleted one, or one that never was", () => {
      spec.given([created]).when(roll({ userId: 'usr_2' })).thenFails('not_found', 'Credential not found');
      spec.given([created, { type: 'CredentialDeleted', data: { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], deletedAt: now.toISOString() } }]).when(roll()).thenFails('not_found');
      spec.given([]).when(roll()).thenFails('not_found');
    });

    it('rolls again from the newest key', () => {
      spec.given([created, rolled]).when(roll({ keyHash: 'hash2' })).thenFails('conflict');
      spec.given([created, rolled]).when(roll({ keyHash: 'hash3' })).then([{ ...rolled, data: { ...rolled.data, keyHash: 'hash3' } }]);
    });

    it('a deleted key stops whatever overlap was running', () =>
      spec
        .given([created, rolled])
        .when({ type: 'DeleteCredential', data: { userId: 'usr_1', now } })
        .then([{ type: 'CredentialDeleted', data: { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], deletedAt: now.toISOString() } }]));
  });

  describe('recording that a key was used', () => {
    const use = (at: string): CredentialCommand => ({ type: 'RecordCredentialUse', data: { usedAt: new Date(at) } });
    const used = (at: string): CredentialEvent => ({ type: 'CredentialUsed', data: { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], usedAt: at } });

    it('records the first use', () => spec.given([created]).when(use('2026-01-02T04:00:00.000Z')).then([used('2026-01-02T04:00:00.000Z')]));

    it('records nothing within the hour of the last recorded use, whichever instance asks', () => {
      spec.given([created, used('2026-01-02T04:00:00.000Z')]).when(use('2026-01-02T04:59:59.999Z')).thenNothingHappens();
      spec.given([created, used('2026-01-02T04:00:00.000Z')]).when(use('2026-01-02T03:30:00.000Z')).thenNothingHappens();
      spec.given([created, used('2026-01-02T04:00:00.000Z')]).when(use('2026-01-02T05:00:00.000Z')).then([used('2026-01-02T05:00:00.000Z')]);
    });

    it('records nothing of a deleted key or an unknown one', () => {
      spec.given([]).when(use('2026-01-02T04:00:00.000Z')).thenNothingHappens();
      spec
        .given([created, { type: 'CredentialDeleted', data: { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], deletedAt: now.toISOString() } }])
        .when(use('2026-01-02T04:00:00.000Z'))
        .thenNothingHappens();
    });
  });
});
