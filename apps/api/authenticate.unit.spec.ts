import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { hashKey } from '../../infra/crypto/keys.ts';
import { createReadModels } from '../../projections/read-models.ts';
import { authenticate } from './authenticate.ts';

let position = 0n;
const recorded = (streamName: string, type: string, data: unknown): RecordedEvent => ({
  id: `e${++position}`,
  type,
  data,
  metadata: {},
  streamName,
  streamVersion: 1n,
  globalPosition: position,
  recordedAt: new Date(0),
});

const models = createReadModels();
models.apps.apply(recorded('app-app_1', 'AppCreated', { appId: 'app_1', userId: 'usr_1', name: 'A', protocol: ['signal'], createdAt: '' }));
const credentialCreated = (credentialId: string, key: string, type: string, webhookAuthHeaderName: string | null, owner = { userId: 'usr_1', appIds: ['app_1'] }) =>
  recorded(`credential-${credentialId}`, 'CredentialCreated', {
    credentialId,
    ...owner,
    type,
    name: credentialId,
    keyHash: hashKey(key),
    secretEncrypted: 'x',
    keyPreview: 'rly_',
    webhookUrl: type === 'api-key' ? null : 'https://hooks.example.com/',
    webhookAuthType: null,
    webhookAuthHeaderName,
    createdAt: '',
  });
const credential = (credentialId: string, key: string, type: string, webhookAuthHeaderName: string | null) => models.credentials.apply(credentialCreated(credentialId, key, type, webhookAuthHeaderName));
credential('cred_api', 'rly_api', 'api-key', null);
credential('cred_hook', 'rly_hook', 'webhook-header', 'x-hook');
// Written before standard header names were refused: a credential that reads its key from user-agent.
credential('cred_ua', 'rly_ua', 'webhook-header', 'user-agent');

const auth = (headers: Record<string, string>) => authenticate(headers, models.credentials, models.apps);

describe('which credential a request presents', () => {
  it('a request without a key is "missing", whatever other tenants named as their key headers', () => {
    expect(auth({ 'user-agent': 'curl/8.5', accept: '*/*' })).toEqual({ kind: 'missing' });
    expect(auth({ 'x-hook': 'not a key' })).toEqual({ kind: 'missing' });
  });

  it('a custom header counts only with the key of the credential that named it', () => {
    expect(auth({ 'x-hook': 'rly_hook' })).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_hook' }, appIds: ['app_1'] });
    expect(auth({ 'x-hook': 'rly_api' })).toEqual({ kind: 'missing' });
    expect(auth({ 'user-agent': 'rly_ua' })).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_ua' } });
  });

  it('keeps the interface’s rules for the standard headers', () => {
    expect(auth({ authorization: 'Bearer rly_api' })).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_api' } });
    expect(auth({ 'x-api-key': 'rly_api' })).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_api' } });
    expect(auth({ authorization: 'Bearer rly_hook' })).toEqual({ kind: 'wrong-header' });
    expect(auth({ authorization: 'Bearer rly_unknown' })).toEqual({ kind: 'unknown' });
  });

  it('a rolled key: the old key works until its overlap ends, in its own header, then is an unknown key', () => {
    credential('cred_roll', 'rly_old', 'webhook-header', 'x-roll');
    models.credentials.apply(
      recorded('credential-cred_roll', 'CredentialRolled', {
        credentialId: 'cred_roll',
        userId: 'usr_1',
        appIds: ['app_1'],
        keyHash: hashKey('rly_new'),
        secretEncrypted: 'y',
        keyPreview: 'rly_',
        previousKeyUntil: '2026-01-02T00:00:00.000Z',
        rolledAt: '2026-01-01T00:00:00.000Z',
      }),
    );
    const at = (headers: Record<string, string>, time: string) => authenticate(headers, models.credentials, models.apps, Date.parse(time));
    expect(at({ 'x-roll': 'rly_old' }, '2026-01-01T23:59:59.999Z')).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_roll' }, keyHash: hashKey('rly_old') });
    expect(at({ 'x-roll': 'rly_new' }, '2026-01-01T00:00:00.000Z')).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_roll' }, keyHash: hashKey('rly_new') });
    expect(at({ authorization: 'Bearer rly_old' }, '2026-01-01T12:00:00.000Z')).toEqual({ kind: 'wrong-header' });
    expect(at({ 'x-roll': 'rly_old' }, '2026-01-02T00:00:00.000Z')).toEqual({ kind: 'missing' });
    expect(at({ 'x-roll': 'rly_new', authorization: 'Bearer rly_old' }, '2026-01-02T00:00:00.000Z')).toMatchObject({ kind: 'ok', credential: { credentialId: 'cred_roll' } });
    expect(at({ authorization: 'Bearer rly_old' }, '2026-01-02T00:00:00.000Z')).toEqual({ kind: 'unknown' });
  });

  it('gives the live apps of a key once per change of the apps: the same list while nothing changes, without an app deleted since', () => {
    const models2 = createReadModels();
    for (const appId of ['app_a', 'app_b']) models2.apps.apply(recorded(`app-${appId}`, 'AppCreated', { appId, userId: 'usr_2', name: appId, protocol: ['signal'], createdAt: '' }));
    models2.credentials.apply(credentialCreated('cred_two', 'rly_two', 'api-key', null, { userId: 'usr_2', appIds: ['app_a', 'app_b'] }));
    const appIdsOf = () => {
      const result = authenticate({ 'x-api-key': 'rly_two' }, models2.credentials, models2.apps);
      return result.kind === 'ok' ? result.appIds : undefined;
    };
    const first = appIdsOf();
    expect(first).toEqual(['app_a', 'app_b']);
    expect(appIdsOf()).toBe(first);
    models2.apps.apply(recorded('app-app_a', 'AppDeleted', { appId: 'app_a', userId: 'usr_2', deletedAt: '' }));
    expect(appIdsOf()).toEqual(['app_b']);
  });
});
