import { describe, expect, it } from 'vitest';
import { compareSnapshots } from './snapshot-comparison.ts';

const app = (id: string, name: string, messengers: Array<{ id: string; status: string }> = []) => ({
  id,
  userId: 'usr_1',
  settings: { name, protocol: ['signal'], status: 'active' },
  createdAt: '2026-01-01T00:00:00.000Z',
  messengers,
});
const credential = (credentialId: string, name = 'key') => ({ credentialId, userId: 'usr_1', type: 'api-key', name, appIds: ['app_1', 'app_2'] });
const users = (list: Array<{ id: string; tier: string }>, sessions: Array<[string, { userId: string; expiresAt: number }]>) => ({ users: list, sessions });

const nothingElse = { missingInLive: { count: 0, items: [] }, extraInLive: { count: 0, items: [] }, different: { count: 0, items: [] } };

describe('compareSnapshots', () => {
  it('equal read models are equal whatever the order of entries, nested records and object keys', () => {
    const live = [
      app('app_2', 'B', [
        { id: 'am_2', status: 'active' },
        { id: 'am_1', status: 'disabled' },
      ]),
      app('app_1', 'A'),
    ];
    const rebuilt = [
      app('app_1', 'A'),
      {
        messengers: [
          { status: 'disabled', id: 'am_1' },
          { id: 'am_2', status: 'active' },
        ],
        createdAt: '2026-01-01T00:00:00.000Z',
        settings: { status: 'active', protocol: ['signal'], name: 'B' },
        userId: 'usr_1',
        id: 'app_2',
      },
    ];
    expect(compareSnapshots('apps', live, rebuilt)).toEqual({ name: 'apps', equal: true, live: { apps: 2 }, rebuilt: { apps: 2 }, ...nothingElse });
  });

  it('a field that is undefined in memory equals one absent from the snapshot file', () => {
    const rebuilt = [{ ...credential('crd_1'), webhookUrl: undefined }];
    expect(compareSnapshots('credentials', [credential('crd_1')], rebuilt).equal).toBe(true);
  });

  it('reports a missing, an extra and a changed entry, each by its id, with the fields that differ', () => {
    const live = [credential('crd_1'), credential('crd_3', 'renamed'), credential('crd_9')];
    const rebuilt = [credential('crd_3'), credential('crd_2'), credential('crd_1')];
    expect(compareSnapshots('credentials', live, rebuilt)).toEqual({
      name: 'credentials',
      equal: false,
      live: { credentials: 3 },
      rebuilt: { credentials: 3 },
      missingInLive: { count: 1, items: ['crd_2'] },
      extraInLive: { count: 1, items: ['crd_9'] },
      different: { count: 1, items: [{ id: 'crd_3', fields: ['name'] }] },
    });
  });

  it('names nested fields, and a list whose order matters (appIds) differs when reordered', () => {
    const apps = compareSnapshots('apps', [app('app_1', 'Renamed', [{ id: 'am_1', status: 'disabled' }])], [app('app_1', 'A', [{ id: 'am_1', status: 'active' }])]);
    expect(apps.different.items).toEqual([{ id: 'app_1', fields: ['messengers', 'settings.name'] }]);
    const credentials = compareSnapshots('credentials', [{ ...credential('crd_1'), appIds: ['app_2', 'app_1'] }], [credential('crd_1')]);
    expect(credentials.different.items).toEqual([{ id: 'crd_1', fields: ['appIds'] }]);
  });

  it('an object of lists is compared per collection; [key, value] pairs by key, shown by the key’s first characters', () => {
    const hash = 'a'.repeat(64);
    const other = 'b'.repeat(64);
    const live = users(
      [
        { id: 'usr_1', tier: 'paid' },
        { id: 'usr_2', tier: 'free' },
      ],
      [[hash, { userId: 'usr_1', expiresAt: 1 }]],
    );
    const rebuilt = users(
      [
        { id: 'usr_2', tier: 'free' },
        { id: 'usr_1', tier: 'free' },
      ],
      [
        [other, { userId: 'usr_2', expiresAt: 5 }],
        [hash, { userId: 'usr_1', expiresAt: 2 }],
      ],
    );
    const result = compareSnapshots('users', live, rebuilt);
    expect(result).toEqual({
      name: 'users',
      equal: false,
      live: { users: 2, sessions: 1 },
      rebuilt: { users: 2, sessions: 2 },
      missingInLive: { count: 1, items: ['sessions/bbbbbbbb…'] },
      extraInLive: { count: 0, items: [] },
      different: {
        count: 2,
        items: [
          { id: 'users/usr_1', fields: ['tier'] },
          { id: 'sessions/aaaaaaaa…', fields: ['expiresAt'] },
        ],
      },
    });
    expect(JSON.stringify(result)).not.toContain(hash);
    expect(compareSnapshots('users', rebuilt, structuredClone(rebuilt)).equal).toBe(true);
  });

  it('lists at most `limit` differences of a kind, with their count', () => {
    const rebuilt = Array.from({ length: 30 }, (_, i) => credential(`crd_${String(i).padStart(2, '0')}`));
    const result = compareSnapshots('credentials', [], rebuilt, 20);
    expect(result.missingInLive.count).toBe(30);
    expect(result.missingInLive.items).toEqual(rebuilt.slice(0, 20).map((c) => c.credentialId));
    expect(result.live).toEqual({ credentials: 0 });
  });

  it('entries without an identity are compared as a set of values; a snapshot that is no list is one entry', () => {
    expect(compareSnapshots('tags', ['b', 'a'], ['a', 'b']).equal).toBe(true);
    const tags = compareSnapshots('tags', ['a', 'c'], ['a', 'b']);
    expect([tags.missingInLive.items, tags.extraInLive.items]).toEqual([['"b"'], ['"c"']]);
    expect(compareSnapshots('counter', { total: 3, by: { a: 1 } }, { by: { a: 2 }, total: 3 }).different.items).toEqual([{ id: 'counter', fields: ['by.a'] }]);
  });
});
