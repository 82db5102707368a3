import { describe, expect, it } from 'vitest';
import { bodiesBinding, type AcceptedMessage, type MessageBody, type OutboundRef } from '../../domain/send-batch/message.ts';
import { bodyStrings } from '../../domain/shared/message-body.ts';
import { sealLegacyJson } from '../../test/support/legacy-seal.ts';
import { createMessageSealer } from '../../infra/crypto/message-sealer.ts';
import { createSecretBox } from '../../infra/crypto/secret-box.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';
import { createBodyOpener } from './sealed-bodies.ts';

const sealer = createMessageSealer(createSecretBox('44'.repeat(32)));
const batchId = 'b1';
const now = new Date('2026-11-23T00:00:00Z');

/**
 * A send batch of two apps whose messages interleave, each app's bodies sealed under its own key,
 * as the send route seals them (format s2), or as Relay 0.1 did before (JSON, s1).
 */
const batchOfTwoApps = (format: 'strings' | 'json' = 'strings') => {
  const keys = { a: sealer.newKey(), b: sealer.newKey() };
  const sent = [
    { messageId: 'm1', appId: 'a', body: { c: '+15550001', t: 'one' } },
    { messageId: 'm2', appId: 'b', body: { c: '+15550002', t: 'two', g: 'group' } },
    { messageId: 'm3', appId: 'a', body: { c: '+15550003', t: 'three' } },
    { messageId: 'm4', appId: 'b', body: { c: '+15550004', t: 'four' } },
  ] as const;
  const messages: AcceptedMessage[] = sent.map(({ messageId, appId }) => ({ messageId, appId, messenger: 'signal', keyId: keys[appId].id }));
  const bodies = (['a', 'b'] as const).map((appId) => ({
    keyId: keys[appId].id,
    appId,
    sealed: ((bodies: MessageBody[]) =>
      format === 'strings'
        ? sealer.seal(keys[appId].raw, bodiesBinding(batchId, keys[appId].id), bodyStrings(bodies))
        : sealLegacyJson(keys[appId].raw, bodiesBinding(batchId, keys[appId].id), bodies))(sent.filter((m) => m.appId === appId).map((m): MessageBody => m.body)),
  }));
  const event: RecordedEvent = {
    id: 'e1',
    type: 'MessagesAccepted',
    data: { batchId, credentialId: 'c', userId: 'u', messages, bodies, acceptedAt: now.toISOString() },
    metadata: {},
    streamName: `sendbatch-${batchId}`,
    streamVersion: 1n,
    globalPosition: 1n,
    recordedAt: now,
  };
  const reads: string[] = [];
  const store = {
    readStream: async (stream: string) => {
      reads.push(stream);
      return { version: 1n, events: [event] };
    },
  } as unknown as EventStore;
  const refs: OutboundRef[] = messages.map((message) => ({ ...message, batchId }));
  return { keys, sent, store, refs, event, reads };
};

describe('the body opener of the delivery worker', () => {
  it.each(['strings', 'json'] as const)("opens each message's own body from its app's payload (%s), in the order of the event's messages under that key", async (format) => {
    const { keys, sent, store, refs } = batchOfTwoApps(format);
    const opener = createBodyOpener(store, sealer);
    const wrapped = new Map([keys.a, keys.b].map((key) => [key.id, key.wrapped]));
    const opened = await Promise.all(refs.map((ref) => opener.open(ref, wrapped.get(ref.keyId), now)));
    expect(opened).toEqual(sent.map((m) => m.body));
  });

  it('says forgotten when the key is gone, and fails when a payload does not match its messages', async () => {
    const { keys, store, refs } = batchOfTwoApps();
    const opener = createBodyOpener(store, sealer);
    expect(await opener.open(refs[0]!, undefined, now)).toBe('forgotten');
    // Key a's payload under key b's ref: the binding to (batch, key) refuses it.
    const swapped = { ...refs[1]!, keyId: keys.a.id };
    await expect(opener.open(swapped, keys.b.wrapped, now)).rejects.toThrow();
  });

  it('opens a batch that the publisher of its thread remembered without reading the store, unless it was too big to keep or had too many messages', async () => {
    const { keys, sent, store, refs, event, reads } = batchOfTwoApps();
    const wrapped = new Map([keys.a, keys.b].map((key) => [key.id, key.wrapped]));
    const opener = createBodyOpener(store, sealer);
    opener.remember(event);
    expect(await Promise.all(refs.map((ref) => opener.open(ref, wrapped.get(ref.keyId), now)))).toEqual(sent.map((m) => m.body));
    expect(reads).toEqual([]);
    for (const options of [{ maxRememberedBytes: 10 }, { maxRememberedMessages: 3 }]) {
      reads.length = 0;
      const other = createBodyOpener(store, sealer, options);
      other.remember(event);
      expect(await other.open(refs[0]!, wrapped.get(refs[0]!.keyId), now)).toEqual(sent[0]!.body);
      expect(reads, JSON.stringify(options)).toEqual([`sendbatch-${batchId}`]);
    }
  });
});
