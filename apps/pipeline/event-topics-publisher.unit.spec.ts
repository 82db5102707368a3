import { describe, expect, it } from 'vitest';
import type { RecordedEvent } from '../../infra/event-store/port.ts';
import { eventRecord } from './event-topics-publisher.ts';

const recorded = (streamName: string, type: string, data: unknown): RecordedEvent => ({
  id: 'e1',
  type,
  data,
  metadata: { actor: 'user:u1', correlationId: 'c1' },
  streamName,
  streamVersion: 2n,
  globalPosition: 17n,
  recordedAt: new Date('2026-11-23T10:00:00.000Z'),
});

describe('events on events.<category>', () => {
  it('goes to the topic of its category, keyed by stream, with its id', () => {
    const record = eventRecord(recorded('app-a1', 'AppUpdated', { appId: 'a1', changes: { name: 'x' } }));
    expect(record).toMatchObject({ topic: 'events.app', key: 'app-a1', id: 'e1' });
    expect(JSON.parse(record.value)).toEqual({
      id: 'e1',
      type: 'AppUpdated',
      streamName: 'app-a1',
      streamVersion: '2',
      globalPosition: '17',
      recordedAt: '2026-11-23T10:00:00.000Z',
      data: { appId: 'a1', changes: { name: 'x' } },
      metadata: { actor: 'user:u1', correlationId: 'c1' },
    });
  });

  it('withholds secrets and key or session hashes, also nested', () => {
    const credential = eventRecord(
      recorded('credential-k1', 'CredentialCreated', { credentialId: 'k1', keyHash: 'h', secretEncrypted: 's', keyPreview: 'rly_ab…' }),
    );
    expect(JSON.parse(credential.value).data).toEqual({ credentialId: 'k1', keyPreview: 'rly_ab…' });
    const session = eventRecord(recorded('user-u1', 'SessionStarted', { userId: 'u1', tokenHash: 'h' }));
    expect(JSON.parse(session.value).data).toEqual({ userId: 'u1' });
    const app = eventRecord(recorded('app-a1', 'AppUpdated', { appId: 'a1', changes: { webhookAuthSecretEncrypted: 's', name: 'n' } }));
    expect(JSON.parse(app.value).data).toEqual({ appId: 'a1', changes: { name: 'n' } });
  });
});
