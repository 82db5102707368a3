import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../infra/event-store/port.ts';
import { createReadModels } from './read-models.ts';

let position = 0n;
const recorded = (streamName: string, type: string, data: unknown): RecordedEvent => {
  position += 1n;
  return { id: `e${position}`, type, data, metadata: {}, streamName, streamVersion: 1n, globalPosition: position, recordedAt: new Date(0) };
};

const appCreated = recorded('app-app_1', 'AppCreated', {
  appId: 'app_1',
  userId: 'usr_1',
  name: 'Bot',
  protocol: ['signal'],
  status: 'active',
  deliveryType: 'poll',
  webhookUrl: null,
  webhookAuthType: null,
  webhookAuthSecretEncrypted: null,
  webhookAuthHeaderName: null,
  apiKeyId: null,
  createdAt: '2026-01-01T00:00:00.000Z',
});
const messengerAdded = recorded('app-app_1', 'AppMessengerAdded', {
  appId: 'app_1',
  appMessengerId: 'am_1',
  messenger: 'signal',
  status: 'processing',
  addedAt: '2026-01-01T00:00:00.000Z',
});
const provisioned = recorded('app-app_1', 'AppMessengerProvisioned', { appId: 'app_1', appMessengerId: 'am_1', address: '+15550100', provisionedAt: '' });
const activated = recorded('app-app_1', 'AppMessengerStatusChanged', { appId: 'app_1', appMessengerId: 'am_1', status: 'active', changedAt: '' });
const credential = (id: string, keyHash: string, extra: Record<string, unknown> = {}) =>
  recorded(`credential-${id}`, 'CredentialCreated', {
    credentialId: id,
    userId: 'usr_1',
    type: 'api-key',
    name: 'k',
    appIds: ['app_1'],
    keyHash,
    secretEncrypted: 'x',
    keyPreview: 'rly_',
    webhookUrl: null,
    webhookAuthType: null,
    webhookAuthHeaderName: null,
    createdAt: '',
    ...extra,
  });

describe('read models', () => {
  it('apps: an app-messenger is processing until provisioned, then routable by its address', () => {
    const models = createReadModels();
    [appCreated, messengerAdded].forEach((e) => models.apps.apply(e));
    expect(models.apps.appMessengerOf('app_1', 'signal')).toEqual({
      id: 'am_1',
      appId: 'app_1',
      messenger: 'signal',
      status: 'processing',
      address: null,
      health: 'ok',
      healthReason: null,
    });
    expect(models.apps.pendingProvisioning().map((m) => m.id)).toEqual(['am_1']);
    [provisioned, activated].forEach((e) => models.apps.apply(e));
    expect(models.apps.byBotAddress('signal', '+15550100')).toMatchObject({ id: 'am_1', status: 'active' });
    expect(models.apps.pendingProvisioning()).toEqual([]);
  });

  it("apps: an app-messenger's health follows its events, and a snapshot from before health reads as ok", () => {
    const models = createReadModels();
    [appCreated, messengerAdded, provisioned, activated].forEach((e) => models.apps.apply(e));
    models.apps.apply(recorded('app-app_1', 'AppMessengerHealthChanged', { appId: 'app_1', appMessengerId: 'am_1', health: 'account-missing', reason: 'gone', changedAt: '' }));
    expect(models.apps.appMessenger('am_1')).toMatchObject({ health: 'account-missing', healthReason: 'gone' });
    const old = JSON.parse(JSON.stringify(models.apps.snapshot())) as Array<{ messengers: Array<Record<string, unknown>> }>;
    for (const m of old[0]!.messengers) {
      delete m.health;
      delete m.healthReason;
    }
    const restored = createReadModels();
    restored.apps.restore(old);
    expect(restored.apps.appMessenger('am_1')).toMatchObject({ health: 'ok', healthReason: null });
  });

  it('apps: a deleted app and its identities disappear', () => {
    const models = createReadModels();
    [appCreated, messengerAdded, provisioned, activated].forEach((e) => models.apps.apply(e));
    models.apps.apply(recorded('app-app_1', 'AppDeleted', { appId: 'app_1', userId: 'usr_1', deletedAt: '' }));
    expect(models.apps.isLive('app_1')).toBe(false);
    expect(models.apps.appsOf('usr_1')).toEqual([]);
    expect(models.apps.byBotAddress('signal', '+15550100')).toBeUndefined();
    expect(models.apps.appMessenger('am_1')).toBeUndefined();
  });

  it('credentials: found by key hash until deleted; custom header names are counted', () => {
    const models = createReadModels();
    models.credentials.apply(credential('cred_1', 'h1'));
    models.credentials.apply(credential('cred_2', 'h2', { type: 'webhook-header', webhookAuthHeaderName: 'x-hook' }));
    expect(models.credentials.byKeyHash('h1')?.credentialId).toBe('cred_1');
    expect(models.credentials.isCustomHeaderName('x-hook')).toBe(true);
    models.credentials.apply(recorded('credential-cred_2', 'CredentialDeleted', { credentialId: 'cred_2', userId: 'usr_1', deletedAt: '' }));
    expect(models.credentials.byKeyHash('h2')).toBeUndefined();
    expect(models.credentials.isCustomHeaderName('x-hook')).toBe(false);
    expect(models.credentials.credentialsOf('usr_1').map((c) => c.credentialId)).toEqual(['cred_1']);
  });

  it('credentials: a rolled key finds its credential by both keys until the old one ends; a use is remembered', () => {
    const models = createReadModels();
    models.credentials.apply(credential('cred_1', 'h1'));
    const roll = (keyHash: string, previousKeyUntil: string) =>
      models.credentials.apply(
        recorded('credential-cred_1', 'CredentialRolled', { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], keyHash, secretEncrypted: `enc-${keyHash}`, keyPreview: keyHash, previousKeyUntil, rolledAt: '' }),
      );
    roll('h2', '2026-01-02T00:00:00.000Z');
    const before = Date.parse('2026-01-01T23:59:59.999Z');
    const after = Date.parse('2026-01-02T00:00:00.000Z');
    expect(models.credentials.byKeyHash('h1', before)).toMatchObject({ credentialId: 'cred_1', keyHash: 'h2', secretEncrypted: 'enc-h2', previousKeyHash: 'h1' });
    expect(models.credentials.byKeyHash('h1', after)).toBeUndefined();
    expect(models.credentials.byKeyHash('h2', after)?.credentialId).toBe('cred_1');
    models.credentials.apply(recorded('credential-cred_1', 'CredentialUsed', { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], usedAt: '2026-01-01T12:00:00.000Z' }));
    expect(models.credentials.credential('cred_1')?.lastUsedAt).toBe('2026-01-01T12:00:00.000Z');
    expect(models.credentials.byKeyHash('h1', before)?.lastUsedAt).toBe('2026-01-01T12:00:00.000Z');
    // Rolling again: the first key stops at once, the second works for its own overlap.
    roll('h3', '2026-01-03T00:00:00.000Z');
    expect(models.credentials.byKeyHash('h1', before)).toBeUndefined();
    expect(models.credentials.byKeyHash('h2', after)?.keyHash).toBe('h3');
    const copy = createReadModels();
    copy.credentials.restore(JSON.parse(JSON.stringify(models.credentials.snapshot())));
    expect(copy.credentials.byKeyHash('h2', after)).toEqual(models.credentials.byKeyHash('h2', after));
    models.credentials.apply(recorded('credential-cred_1', 'CredentialDeleted', { credentialId: 'cred_1', userId: 'usr_1', appIds: ['app_1'], deletedAt: '' }));
    expect(models.credentials.byKeyHash('h2', after)).toBeUndefined();
    expect(models.credentials.byKeyHash('h3', after)).toBeUndefined();
  });

  it('users: sessions expire, tiers change', () => {
    const models = createReadModels();
    models.users.apply(recorded('user-usr_1', 'UserRegistered', { userId: 'usr_1', email: 'a@b.c', name: 'A', registeredAt: '' }));
    models.users.apply(
      recorded('user-usr_1', 'SessionStarted', { userId: 'usr_1', sessionId: 's', tokenHash: 't', startedAt: '', expiresAt: '2026-01-01T00:00:00.000Z' }),
    );
    expect(models.users.sessionUser('t', Date.parse('2025-12-31T23:59:59.000Z'))?.email).toBe('a@b.c');
    expect(models.users.sessionUser('t', Date.parse('2026-01-01T00:00:00.000Z'))).toBeUndefined();
    expect(models.users.tierOf('usr_1')).toBe('free');
    models.users.apply(recorded('user-usr_1', 'SendTierChanged', { userId: 'usr_1', tier: 'paid', changedAt: '' }));
    expect(models.users.tierOf('usr_1')).toBe('paid');
  });

  it('users: an ended session is refused at once; expired ones are dropped when the user starts another', () => {
    const models = createReadModels();
    const start = (sessionId: string, hash: string, startedAt: string, expiresAt: string) =>
      models.users.apply(recorded('user-usr_1', 'SessionStarted', { userId: 'usr_1', sessionId, tokenHash: hash, startedAt, expiresAt }));
    models.users.apply(recorded('user-usr_1', 'UserRegistered', { userId: 'usr_1', email: 'a@b.c', name: 'A', registeredAt: '' }));
    start('s1', 'h1', '2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z');
    start('s2', 'h2', '2026-01-01T01:00:00.000Z', '2026-03-01T00:00:00.000Z');
    const during = Date.parse('2026-01-01T12:00:00.000Z');
    expect(models.users.session('h1', during)?.session.sessionId).toBe('s1');
    expect(models.users.sessionsOf('usr_1', during).map((s) => s.sessionId)).toEqual(['s1', 's2']);
    models.users.apply(recorded('user-usr_1', 'SessionEnded', { userId: 'usr_1', sessionId: 's2', reason: 'logout', endedAt: '' }));
    expect(models.users.sessionUser('h2', during)).toBeUndefined();
    start('s3', 'h3', '2026-01-05T00:00:00.000Z', '2026-02-01T00:00:00.000Z');
    expect((models.users.snapshot() as { sessions: Array<[string, unknown]> }).sessions.map(([hash]) => hash)).toEqual(['h3']);
  });

  it('ignores event types it does not know', () => {
    const models = createReadModels();
    expect(() => models.all.forEach((p) => p.apply(recorded('app-x', 'SomethingElse', {})))).not.toThrow();
  });
});

describe('read-model snapshots', () => {
  it('a snapshot restored into fresh read models answers every query the same', () => {
    const models = createReadModels();
    [appCreated, messengerAdded, provisioned, activated].forEach((e) => models.apps.apply(e));
    models.credentials.apply(credential('cred_9', 'h9', { type: 'webhook-header', webhookAuthHeaderName: 'x-hook' }));
    models.users.apply(recorded('user-usr_1', 'UserRegistered', { userId: 'usr_1', email: 'a@b.c', name: 'A', registeredAt: '' }));
    models.users.apply(recorded('user-usr_1', 'SessionStarted', { userId: 'usr_1', sessionId: 's', tokenHash: 't', startedAt: '', expiresAt: '2099-01-01T00:00:00.000Z' }));
    const copy = createReadModels();
    for (const projection of models.all) {
      copy.all.find((p) => p.name === projection.name)!.restore(JSON.parse(JSON.stringify(projection.snapshot())));
    }
    expect(copy.apps.byBotAddress('signal', '+15550100')).toEqual(models.apps.byBotAddress('signal', '+15550100'));
    expect(copy.apps.appsOf('usr_1')).toEqual(models.apps.appsOf('usr_1'));
    expect(copy.credentials.byKeyHash('h9')).toEqual(models.credentials.byKeyHash('h9'));
    expect(copy.credentials.isCustomHeaderName('x-hook')).toBe(true);
    expect(copy.users.sessionUser('t', 0)).toEqual(models.users.sessionUser('t', 0));
    // The restored models keep following events.
    copy.apps.apply(recorded('app-app_1', 'AppMessengerStatusChanged', { appId: 'app_1', appMessengerId: 'am_1', status: 'disabled', changedAt: '' }));
    expect(copy.apps.appMessengerOf('app_1', 'signal')?.status).toBe('disabled');
    expect(copy.apps.appMessenger('am_1')?.status).toBe('disabled');
  });
});

describe('groups projection', () => {
  const ref = { appId: 'app_1', appMessengerId: 'am_1', messenger: 'signal' };
  const at = '2026-01-01T00:00:00.000Z';
  const requested = (requestId: string, operation: string) =>
    recorded('group-am_1', 'GroupChangeRequested', { ...ref, requestId, operation, sealed: operation === 'invite-link' ? null : 's2:c', keyId: 'k1', groupName: 'Bot', requestedAt: at });

  it('keeps the sealed group, link and members, and what became of each request, telling listeners', () => {
    const { groups } = createReadModels();
    const changed: string[] = [];
    groups.onChange((id) => changed.push(id));
    groups.apply(requested('r1', 'add-member'));
    expect(groups.outcome('am_1', 'r1')).toEqual({ status: 'pending', operation: 'add-member' });
    groups.apply(recorded('group-am_1', 'GroupCreated', { ...ref, requestId: 'r1', sealed: 's2:group', keyId: 'k1', createdAt: at }));
    groups.apply(recorded('group-am_1', 'GroupMembersSynced', { ...ref, sealed: 's2:list', keyId: 'k1', memberCount: 1, digest: 'd', syncedAt: at }));
    groups.apply(recorded('group-am_1', 'GroupMemberAdded', { ...ref, requestId: 'r1', sealed: 's2:c', keyId: 'k1', changedAt: at }));
    groups.apply(requested('r2', 'invite-link'));
    groups.apply(recorded('group-am_1', 'GroupChangeFailed', { ...ref, requestId: 'r2', operation: 'invite-link', reason: 'Nope', failedAt: at }));
    expect(groups.outcome('am_1', 'r1')).toEqual({ status: 'done', operation: 'add-member' });
    expect(groups.outcome('am_1', 'r2')).toEqual({ status: 'failed', operation: 'invite-link', reason: 'Nope' });
    expect(groups.group('am_1')).toMatchObject({ group: 's2:group', members: 's2:list', memberCount: 1, link: null });
    expect(groups.created().map((g) => g.appMessengerId)).toEqual(['am_1']);
    expect(changed).toEqual(['am_1', 'am_1', 'am_1', 'am_1', 'am_1']);
  });

  it('keeps the latest 50 requests of a group', () => {
    const { groups } = createReadModels();
    for (let i = 0; i < 60; i++) groups.apply(requested(`r${i}`, 'add-member'));
    expect(groups.group('am_1')!.requests.map((r) => r.requestId)).toEqual(Array.from({ length: 50 }, (_, i) => `r${i + 10}`));
    expect(groups.outcome('am_1', 'r9')).toBeUndefined();
  });
});
