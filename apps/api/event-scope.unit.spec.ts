import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { scopeEvent } from './event-scope.ts';

const event = (streamName: string, data: unknown): RecordedEvent => ({
  id: 'e',
  type: 'T',
  data,
  metadata: {},
  streamName,
  streamVersion: 1n,
  globalPosition: 1n,
  recordedAt: new Date(0),
});
const mine = new Set(['app_a']);

describe('which events a key may read', () => {
  it('an app stream of its apps, and no other', () => {
    expect(scopeEvent(event('app-app_a', { appId: 'app_a' }), mine)).toEqual({ data: { appId: 'app_a' } });
    expect(scopeEvent(event('app-app_b', { appId: 'app_b' }), mine)).toBeUndefined();
  });

  it('deliveries and inbound messages of its apps', () => {
    expect(scopeEvent(event('outbound-m1', { messageId: 'm1', appId: 'app_a' }), mine)).toBeDefined();
    expect(scopeEvent(event('outbound-m2', { messageId: 'm2', appId: 'app_b' }), mine)).toBeUndefined();
    expect(scopeEvent(event('inbound-m3', { messageId: 'm3', appId: 'app_a' }), mine)).toBeDefined();
    expect(scopeEvent(event('inbound-m4', { messageId: 'm4', appId: 'app_b' }), mine)).toBeUndefined();
  });

  it('group changes of its apps (their contact ids sealed, and withheld from the stream)', () => {
    expect(scopeEvent(event('group-am_a', { appId: 'app_a', appMessengerId: 'am_a' }), mine)).toBeDefined();
    expect(scopeEvent(event('group-am_b', { appId: 'app_b', appMessengerId: 'am_b' }), mine)).toBeUndefined();
  });

  it('credentials that cover one of its apps', () => {
    expect(scopeEvent(event('credential-k1', { appIds: ['app_b', 'app_a'] }), mine)).toBeDefined();
    expect(scopeEvent(event('credential-k2', { appIds: ['app_b'] }), mine)).toBeUndefined();
  });

  it('only the messages of a send batch that go to its apps', () => {
    const batch = event('sendbatch-b1', { batchId: 'b1', messages: [{ appId: 'app_a', text: 'x' }, { appId: 'app_b', text: 'y' }] });
    expect(scopeEvent(batch, mine)).toEqual({ data: { batchId: 'b1', messages: [{ appId: 'app_a', text: 'x' }] } });
    expect(scopeEvent(batch, new Set(['app_c']))).toBeUndefined();
  });

  it('only the keys of a shredder sweep that belong to its apps', () => {
    const sweep = event('shred-s1', { shredId: 's1', keys: [{ keyId: 'k1', appId: 'app_a' }, { keyId: 'k2', appId: 'app_b' }] });
    expect(scopeEvent(sweep, mine)).toEqual({ data: { shredId: 's1', keys: [{ keyId: 'k1', appId: 'app_a' }] } });
    expect(scopeEvent(sweep, new Set(['app_c']))).toBeUndefined();
  });

  it('pops of its apps’ inbound queues; never user events', () => {
    expect(scopeEvent(event('popcursor-inbound.app_a', { ids: ['m'] }), mine)).toBeDefined();
    expect(scopeEvent(event('popcursor-inbound.app_b', { ids: ['m'] }), mine)).toBeUndefined();
    expect(scopeEvent(event('user-u1', { userId: 'u1' }), mine)).toBeUndefined();
  });
});
