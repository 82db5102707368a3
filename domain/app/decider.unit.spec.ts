import { describe, expect, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { appDecider } from './decider.ts';
import { signingSecretsAt, type AppEvent, type AppSettings } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const spec = deciderSpec(appDecider);
/** The signing secret a route offers (encrypted): taken only when the app needs one. */
const offer = { encrypted: 'enc:whsec_new', rotate: false, overlapMs: 86_400_000 };
const ids = { signal: 'am_s', simplex: 'am_x', session: 'am_n' };
const settings: AppSettings = {
  name: 'Support bot',
  protocol: ['signal'],
  status: 'active',
  deliveryType: 'poll',
  webhookUrl: null,
  webhookAuthType: null,
  webhookAuthSecretEncrypted: null,
  webhookAuthHeaderName: null,
  apiKeyId: null,
};
const created: AppEvent[] = [
  { type: 'AppCreated', data: { ...settings, appId: 'app_1', userId: 'usr_1', createdAt: at } },
  { type: 'AppMessengerAdded', data: { appId: 'app_1', appMessengerId: 'am_s', messenger: 'signal', status: 'processing', addedAt: at } },
];
const provisioned: AppEvent[] = [
  { type: 'AppMessengerProvisioned', data: { appId: 'app_1', appMessengerId: 'am_s', address: '+15550100', provisionedAt: at } },
  { type: 'AppMessengerStatusChanged', data: { appId: 'app_1', appMessengerId: 'am_s', status: 'active', changedAt: at } },
];

describe('app decider', () => {
  it('creates an app with one processing app-messenger per distinct messenger', () =>
    spec
      .given([])
      .when({
        type: 'CreateApp',
        data: { appId: 'app_1', userId: 'usr_1', settings: { ...settings, protocol: ['signal', 'signal', 'simplex'] }, appMessengerIds: ids, liveApps: 0, maxPerUser: 25, signingSecret: offer, now },
      })
      .then([
        { type: 'AppCreated', data: { ...settings, protocol: ['signal', 'simplex'], appId: 'app_1', userId: 'usr_1', createdAt: at } },
        { type: 'AppMessengerAdded', data: { appId: 'app_1', appMessengerId: 'am_s', messenger: 'signal', status: 'processing', addedAt: at } },
        { type: 'AppMessengerAdded', data: { appId: 'app_1', appMessengerId: 'am_x', messenger: 'simplex', status: 'processing', addedAt: at } },
      ]));

  it('refuses an empty name or protocol', () => {
    spec
      .given([])
      .when({ type: 'CreateApp', data: { appId: 'a', userId: 'u', settings: { ...settings, name: ' ' }, appMessengerIds: ids, liveApps: 0, maxPerUser: 25, signingSecret: offer, now } })
      .thenFails('validation', 'Name is required');
    spec
      .given([])
      .when({ type: 'CreateApp', data: { appId: 'a', userId: 'u', settings: { ...settings, protocol: [] }, appMessengerIds: ids, liveApps: 0, maxPerUser: 25, signingSecret: offer, now } })
      .thenFails('validation', 'Protocol must name at least one messenger');
  });

  it('caps the live apps of a user, the length of names and the key header name', () => {
    spec
      .given([])
      .when({ type: 'CreateApp', data: { appId: 'a', userId: 'u', settings, appMessengerIds: ids, liveApps: 25, maxPerUser: 25, signingSecret: offer, now } })
      .thenFails('limit', 'App limit reached: at most 25 per user');
    spec
      .given([])
      .when({ type: 'CreateApp', data: { appId: 'a', userId: 'u', settings: { ...settings, name: 'n'.repeat(101) }, appMessengerIds: ids, liveApps: 0, maxPerUser: 25, signingSecret: offer, now } })
      .thenFails('validation', 'Name exceeds 100 character limit');
    spec
      .given(created)
      .when({ type: 'UpdateApp', data: { userId: 'usr_1', changes: { webhookAuthHeaderName: 'cookie' }, appMessengerIds: ids, signingSecret: offer, now } })
      .thenFails('validation', 'Invalid webhookAuthHeaderName: must not be a standard HTTP header');
  });

  it('provisioning makes the identity known and applies the requested status', () =>
    spec.given(created).when({ type: 'ProvisionAppMessenger', data: { appMessengerId: 'am_s', address: '+15550100', now } }).then(provisioned));

  it('provisioning twice changes nothing', () =>
    spec
      .given([...created, ...provisioned])
      .when({ type: 'ProvisionAppMessenger', data: { appMessengerId: 'am_s', address: '+1999', now } })
      .thenNothingHappens());

  it("records a change of an app-messenger's health, with its reason, and only a change", () => {
    const missing: AppEvent = {
      type: 'AppMessengerHealthChanged',
      data: { appId: 'app_1', appMessengerId: 'am_s', health: 'account-missing', reason: 'gone', changedAt: at },
    };
    spec
      .given([...created, ...provisioned])
      .when({ type: 'RecordAppMessengerHealth', data: { appMessengerId: 'am_s', health: 'account-missing', reason: 'gone', now } })
      .then([missing]);
    spec
      .given([...created, ...provisioned, missing])
      .when({ type: 'RecordAppMessengerHealth', data: { appMessengerId: 'am_s', health: 'account-missing', reason: 'still gone', now } })
      .thenNothingHappens();
    spec
      .given([...created, ...provisioned, missing])
      .when({ type: 'RecordAppMessengerHealth', data: { appMessengerId: 'am_s', health: 'ok', reason: 'ignored when ok', now } })
      .then([{ type: 'AppMessengerHealthChanged', data: { appId: 'app_1', appMessengerId: 'am_s', health: 'ok', reason: null, changedAt: at } }]);
    spec
      .given([...created, ...provisioned])
      .when({ type: 'RecordAppMessengerHealth', data: { appMessengerId: 'am_x', health: 'daemon-unreachable', reason: 'down', now } })
      .thenFails('not_found');
  });

  it('a status asked for while processing is applied at provisioning', () =>
    spec
      .given([
        ...created,
        { type: 'AppMessengerStatusChanged', data: { appId: 'app_1', appMessengerId: 'am_s', status: 'disabled', changedAt: at } },
      ])
      .when({ type: 'ProvisionAppMessenger', data: { appMessengerId: 'am_s', address: '+15550100', now } })
      .then([
        provisioned[0]!,
        { type: 'AppMessengerStatusChanged', data: { appId: 'app_1', appMessengerId: 'am_s', status: 'disabled', changedAt: at } },
      ]));

  it('the owner disables and re-enables an app-messenger', () => {
    spec
      .given([...created, ...provisioned])
      .when({ type: 'ChangeAppMessengerStatus', data: { userId: 'usr_1', appMessengerId: 'am_s', status: 'disabled', now } })
      .then([{ type: 'AppMessengerStatusChanged', data: { appId: 'app_1', appMessengerId: 'am_s', status: 'disabled', changedAt: at } }]);
    spec
      .given([...created, ...provisioned])
      .when({ type: 'ChangeAppMessengerStatus', data: { userId: 'usr_1', appMessengerId: 'am_s', status: 'active', now } })
      .thenNothingHappens();
  });

  it('another user can neither see nor change the app', () => {
    spec
      .given(created)
      .when({ type: 'ChangeAppMessengerStatus', data: { userId: 'usr_2', appMessengerId: 'am_s', status: 'disabled', now } })
      .thenFails('not_found');
    spec.given(created).when({ type: 'DeleteApp', data: { userId: 'usr_2', now } }).thenFails('not_found', 'App not found');
    spec.given(created).when({ type: 'UpdateApp', data: { userId: 'usr_2', changes: { name: 'x' }, appMessengerIds: ids, signingSecret: offer, now } }).thenFails('not_found');
  });

  it('an update that adds a messenger adds its app-messenger', () =>
    spec
      .given(created)
      .when({ type: 'UpdateApp', data: { userId: 'usr_1', changes: { protocol: ['signal', 'session'] }, appMessengerIds: ids, signingSecret: offer, now } })
      .then([
        { type: 'AppUpdated', data: { appId: 'app_1', changes: { protocol: ['signal', 'session'] }, updatedAt: at } },
        { type: 'AppMessengerAdded', data: { appId: 'app_1', appMessengerId: 'am_n', messenger: 'session', status: 'processing', addedAt: at } },
      ]));

  it('a deleted app cannot be deleted again', () =>
    spec
      .given([...created, { type: 'AppDeleted', data: { appId: 'app_1', userId: 'usr_1', deletedAt: at } }])
      .when({ type: 'DeleteApp', data: { userId: 'usr_1', now } })
      .thenFails('not_found'));
  it('refuses delivery by webhook without a webhookUrl, on create and on update', () => {
    spec
      .given([])
      .when({ type: 'CreateApp', data: { appId: 'app_1', userId: 'usr_1', settings: { ...settings, deliveryType: 'webhook' }, appMessengerIds: ids, liveApps: 0, maxPerUser: 25, signingSecret: offer, now } })
      .thenFails('validation', 'webhookUrl is required when deliveryType is webhook');
    spec.given(created).when({ type: 'UpdateApp', data: { userId: 'usr_1', changes: { deliveryType: 'webhook' }, appMessengerIds: ids, signingSecret: offer, now } }).thenFails('validation', 'webhookUrl is required when deliveryType is webhook');
    spec
      .given(created)
      .when({ type: 'UpdateApp', data: { userId: 'usr_1', changes: { deliveryType: 'webhook', webhookUrl: 'https://example.com/hook' }, appMessengerIds: ids, signingSecret: offer, now } })
      .then([{ type: 'AppUpdated', data: { appId: 'app_1', changes: { deliveryType: 'webhook', webhookUrl: 'https://example.com/hook', webhookSigningSecretEncrypted: 'enc:whsec_new' }, updatedAt: at } }]);
  });

  it('gives an app delivered by webhook a signing secret once, and rotates it with an overlap in which the old one still signs (issue 24)', () => {
    const hooked: AppEvent = { type: 'AppUpdated', data: { appId: 'app_1', changes: { deliveryType: 'webhook', webhookUrl: 'https://example.com/hook', webhookSigningSecretEncrypted: 'enc:whsec_old' }, updatedAt: at } };
    // A second change does not replace it.
    spec
      .given([...created, hooked])
      .when({ type: 'UpdateApp', data: { userId: 'usr_1', changes: { webhookUrl: 'https://example.com/other' }, appMessengerIds: ids, signingSecret: offer, now } })
      .then([{ type: 'AppUpdated', data: { appId: 'app_1', changes: { webhookUrl: 'https://example.com/other' }, updatedAt: at } }]);
    spec
      .given([...created, hooked])
      .when({ type: 'UpdateApp', data: { userId: 'usr_1', changes: {}, appMessengerIds: ids, signingSecret: { ...offer, rotate: true }, now } })
      .then([
        {
          type: 'AppUpdated',
          data: {
            appId: 'app_1',
            changes: { webhookSigningSecretEncrypted: 'enc:whsec_new', webhookPreviousSigningSecretEncrypted: 'enc:whsec_old', webhookPreviousSigningSecretUntil: '2026-01-03T03:04:05.000Z' },
            updatedAt: at,
          },
        },
      ]);
    // Created as a webhook app: it has its secret from the start; a poll app has none.
    spec
      .given([])
      .when({ type: 'CreateApp', data: { appId: 'app_1', userId: 'usr_1', settings: { ...settings, deliveryType: 'webhook', webhookUrl: 'https://example.com/hook' }, appMessengerIds: ids, liveApps: 0, maxPerUser: 25, signingSecret: offer, now } })
      .then([
        { type: 'AppCreated', data: { ...settings, deliveryType: 'webhook', webhookUrl: 'https://example.com/hook', webhookSigningSecretEncrypted: 'enc:whsec_new', appId: 'app_1', userId: 'usr_1', createdAt: at } },
        { type: 'AppMessengerAdded', data: { appId: 'app_1', appMessengerId: 'am_s', messenger: 'signal', status: 'processing', addedAt: at } },
      ]);
  });

  it('signs with the current secret, and with the one it replaced until the overlap ends', () => {
    const rotated = { ...settings, webhookSigningSecretEncrypted: 'new', webhookPreviousSigningSecretEncrypted: 'old', webhookPreviousSigningSecretUntil: '2026-01-03T03:04:05.000Z' };
    expect(signingSecretsAt(rotated, now)).toEqual(['new', 'old']);
    expect(signingSecretsAt(rotated, new Date('2026-01-03T03:04:05.000Z'))).toEqual(['new']);
    expect(signingSecretsAt(settings, now)).toEqual([]);
  });

  describe('retry now (the webhook tried again at once)', () => {
    const webhook: AppEvent = { type: 'AppUpdated', data: { appId: 'app_1', changes: { deliveryType: 'webhook', webhookUrl: 'https://bots.example.com/hook' }, updatedAt: at } };
    const retry = (userId = 'usr_1') => ({ type: 'RequestWebhookRetry' as const, data: { userId, now } });

    it('records the owner’s request for an app delivered by webhook', () =>
      spec.given([...created, webhook]).when(retry()).then([{ type: 'AppWebhookRetryRequested', data: { appId: 'app_1', userId: 'usr_1', requestedAt: at } }]));

    it('refuses an app delivered by poll, in words', () => spec.given(created).when(retry()).thenFails('validation', 'This app is not delivered by webhook'));

    it('does not find another user’s app, or a deleted one', () => {
      spec.given([...created, webhook]).when(retry('usr_2')).thenFails('not_found', 'App not found');
      spec.given([...created, webhook, { type: 'AppDeleted', data: { appId: 'app_1', userId: 'usr_1', deletedAt: at } }]).when(retry()).thenFails('not_found', 'App not found');
    });
  });
});
