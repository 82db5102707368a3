import type { RecordedEvent } from '../../infra/event-store/port.ts';

/**
 * Fields that leave Relay in no event stream (Kafka's events.<category>, the HTTP event stream,
 * `relay events`): secrets, even encrypted, the hashes that find a key or a session, and sealed
 * message bodies (docs/privacy.md: readers see that a body existed, by its `keyId`, not even
 * its ciphertext). Only `relay events copy` moves them, to another store.
 */
const WITHHELD = new Set(['secretEncrypted', 'webhookAuthSecretEncrypted', 'keyHash', 'tokenHash', 'secretHash', 'codeHash', 'pollSecretHash', 'contactRef', 'sealed', 'sealedContact', 'bodies', 'memberRef', 'memberDigest', 'removedRefs']);

const withheld = (data: unknown): unknown => {
  if (Array.isArray(data)) return data.map(withheld);
  if (data === null || typeof data !== 'object') return data;
  return Object.fromEntries(Object.entries(data).filter(([key]) => !WITHHELD.has(key)).map(([key, value]) => [key, withheld(value)]));
};

/** An event as published to consumers: every field an auditor needs, positions as strings, no secrets. */
export interface PublicEvent {
  readonly id: string;
  readonly type: string;
  readonly streamName: string;
  readonly streamVersion: string;
  readonly globalPosition: string;
  readonly recordedAt: string;
  readonly data: unknown;
  readonly metadata: unknown;
}

export const toPublicEvent = (event: RecordedEvent, data: unknown = event.data): PublicEvent => ({
  id: event.id,
  type: event.type,
  streamName: event.streamName,
  streamVersion: String(event.streamVersion),
  globalPosition: String(event.globalPosition),
  recordedAt: event.recordedAt.toISOString(),
  data: withheld(data),
  metadata: event.metadata,
});
