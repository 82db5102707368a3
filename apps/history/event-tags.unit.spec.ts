import { describe, expect, it } from 'vitest';
import { tagsOf } from './event-tags.ts';

const tags = (streamName: string, data: unknown, type = 'T') => tagsOf({ streamName, type, data });

describe('event tags', () => {
  it('name the apps an event concerns', () => {
    expect(tags('app-app_a', { appId: 'app_a' })).toEqual(['app:app_a']);
    expect(tags('outbound-m1', { messageId: 'm1', appId: 'app_a' })).toEqual(['app:app_a']);
    expect(tags('inbound-m2', { messageId: 'm2', appId: 'app_b' })).toEqual(['app:app_b']);
    expect(tags('shred-s1', { keys: [{ keyId: 'k1', appId: 'app_c' }, { keyId: 'k2', appId: 'app_a' }, { keyId: 'k3', appId: 'app_c' }] })).toEqual(['app:app_c', 'app:app_a']);
    expect(tags('credential-c1', { appIds: ['app_a', 'app_b'] })).toEqual(['app:app_a', 'app:app_b']);
    expect(tags('sendbatch-b1', { messages: [{ appId: 'app_a' }, { appId: 'app_b' }, { appId: 'app_a' }] })).toEqual(['app:app_a', 'app:app_b']);
    expect(tags('popcursor-inbound.app_z', { ids: [] })).toEqual(['app:app_z']);
  });

  it('users, sessions and anything unknown concern no app', () => {
    expect(tags('user-u1', { userId: 'u1' })).toEqual([]);
    expect(tags('something-x', { appId: 'app_a' })).toEqual([]);
    expect(tags('outbound-m1', null)).toEqual([]);
  });
});
