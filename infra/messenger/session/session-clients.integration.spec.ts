import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/eventually.ts';
import { FakeSessionSwarm } from '../../../test/support/fake-session-swarm.ts';
import { fakeSwarmStorage } from '../../../test/support/fake-swarm-storage.ts';
import { SessionTestClient, type SendOptions } from '../../../test/support/session-test-client.ts';
import type { InboundFromContact } from '../port.ts';
import { MemorySessionIdentityStore } from './identity-store.ts';
import { SessionConnector, type SkippedKind } from './session-connector.ts';
import { SessionUnavailableError } from './session-errors.ts';
import { SnodeHttp, SnodeUnreachableError } from './snode-http.ts';
import type { SnodeTransport } from './snode-transport.ts';
import { SessionStorageClient, type SessionStorageOptions } from './storage-client.ts';

// What today's Session apps send a bot, and what they see of its replies: the connector on the fake
// swarm, the contacts independent test clients written from the apps' sources
// (test/support/session-test-client.ts), each format and content kind as those apps send it.

let swarm: FakeSessionSwarm;
const open: SessionConnector[] = [];
let nextId = 0;

beforeAll(async () => {
  swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 3, rateLimit: false });
});
afterAll(async () => {
  await swarm.close();
});
afterEach(async () => {
  for (const connector of open.splice(0)) await connector.close();
});

interface Bot {
  readonly connector: SessionConnector;
  readonly from: string;
  readonly received: InboundFromContact[];
  readonly skipped: SkippedKind[];
  readonly warnings: { object: object; message: string }[];
}

async function bot(options: { identities?: MemorySessionIdentityStore; storage?: Partial<SessionStorageOptions>; appMessengerId?: string } = {}): Promise<Bot> {
  const skipped: SkippedKind[] = [];
  const warnings: { object: object; message: string }[] = [];
  const connector = new SessionConnector({
    storage: fakeSwarmStorage(swarm, options.storage),
    identities: options.identities ?? new MemorySessionIdentityStore(),
    log: { info: () => undefined, warn: (object, message) => void warnings.push({ object, message }), error: () => undefined },
    poll: { minMs: 50, maxMs: 200 },
    onSkipped: (kind) => void skipped.push(kind),
  });
  open.push(connector);
  const from = await connector.provision(options.appMessengerId ?? 'am-1');
  const received: InboundFromContact[] = [];
  await connector.listen(async (message) => void received.push(message));
  return { connector, from, received, skipped, warnings };
}

const contact = () => SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
const delivery = (b: Bot, contactId: string, text: string, senderName?: string) => ({
  messageId: `m-${++nextId}`,
  from: b.from,
  contactId,
  text,
  ...(senderName !== undefined ? { senderName } : {}),
});

describe('messages from every current Session client', () => {
  const formats: [string, SendOptions][] = [
    ['libsession (iOS, Android, Desktop 1.17.3+): empty verb and path, sourceDevice, proSig, 160-multiple padding', { format: 'libsession' }],
    ['Desktop 1.17.2 and older: PUT /api/v1/message, 160n−1 padding', { format: 'desktop-1.17.2' }],
    ['a legacy client: no sigTimestamp', { format: 'legacy' }],
    ['a legacy client: sigTimestamp 0', { format: 'libsession', sigTimestamp: 0 }],
    ['content without padding', { format: 'unpadded' }],
  ];
  it.each(formats)('hands on text sent by %s', async (_, options) => {
    const b = await bot();
    const c = contact();
    await c.send(b.from, 'hello bot', options);
    await eventually(() => expect(b.received).toHaveLength(1), 10_000);
    expect(b.received[0]).toMatchObject({ contactId: c.sessionId, text: 'hello bot' });
    expect(b.skipped).toEqual([]);
  });

  it('counts what is not text by kind, logs what a person wrote once per kind and bot without content, and goes on to the next message', async () => {
    const b = await bot();
    const c = contact();
    const me = c.sessionId;
    await c.send(b.from, '', { content: { kind: 'typing' } });
    await c.send(b.from, '', { content: { kind: 'readReceipt', timestamps: [Date.now() - 1000] } });
    await c.send(b.from, '', { content: { kind: 'reaction', messageTimestamp: Date.now() - 1000, author: b.from, emoji: '👍' } });
    await c.send(b.from, '', { content: { kind: 'attachment' } });
    await c.send(b.from, '', { content: { kind: 'attachment', voiceNote: true } });
    await c.send(b.from, '', { content: { kind: 'attachment' } }); // a second one: counted, not logged again
    await c.send(b.from, '', { content: { kind: 'call', type: 'preOffer' } });
    await c.send(b.from, '', { content: { kind: 'groupInvite' } });
    await c.send(b.from, '', { content: { kind: 'dataExtraction' } });
    await c.send(b.from, '', { content: { kind: 'unsend', messageTimestamp: Date.now() - 1000, author: me } });
    await c.send(b.from, '', { content: { kind: 'messageRequestResponse' } });
    // Undecodable: bytes that are no Session message at all, stored in the bot's inbox.
    const raw = new SessionStorageClient(fakeSwarmStorage(swarm));
    await raw.store(b.from, Buffer.from('not a Session message'));
    raw.close();
    await c.send(b.from, 'and then text');
    await eventually(() => expect(b.received.map((m) => m.text)).toEqual(['and then text']), 10_000);
    await eventually(() => expect(b.skipped).toHaveLength(12), 5_000);
    expect([...b.skipped].sort()).toEqual(
      ['typing', 'read-receipt', 'reaction', 'attachment', 'voice-note', 'attachment', 'call', 'group-invite', 'data-extraction', 'unsend', 'message-request-response', 'undecodable'].sort(),
    );
    const logged = b.warnings.map((w) => (w.object as { kind?: string }).kind).sort();
    expect(logged).toEqual(['attachment', 'call', 'group-invite', 'reaction', 'undecodable', 'voice-note']);
    expect(JSON.stringify(b.warnings)).not.toContain(me.slice(2));
  });
});

describe('what the contact sees of the bot', () => {
  it('never two messages with one timestamp: concurrent sends to one contact all arrive', async () => {
    const b = await bot();
    const c = contact();
    const results = await Promise.all(Array.from({ length: 25 }, (_, i) => b.connector.deliver(delivery(b, c.sessionId, `burst ${i}`))));
    expect(results.every((r) => r.ok)).toBe(true);
    const got = await c.waitForMessages(25, 15_000);
    expect(new Set(got.map((m) => m.envelopeTimestamp)).size).toBe(25);
    expect(c.duplicates).toEqual([]);
  });

  it('stamps after its last message across a restart, even when the network clock went back', async () => {
    const identities = new MemorySessionIdentityStore();
    const first = await bot({ identities });
    const c = contact();
    expect(await first.connector.deliver(delivery(first, c.sessionId, 'before'))).toEqual({ ok: true });
    const [before] = await c.waitForMessages(1);
    await first.connector.close();
    swarm.setClockOffset(-2_000); // the network's time moved back two seconds
    try {
      const second = await bot({ identities });
      expect(second.from).toBe(first.from);
      expect(await second.connector.deliver(delivery(second, c.sessionId, 'after'))).toEqual({ ok: true });
      const [after] = await c.waitForMessages(1);
      expect(after!.envelopeTimestamp).toBeGreaterThan(before!.envelopeTimestamp);
      expect(c.duplicates).toEqual([]);
    } finally {
      swarm.setClockOffset(0);
    }
  });

  it('sends a retried message with the same timestamp and bytes: a store whose answer was lost is seen once', async () => {
    let lose = 1;
    // The node keeps the message, but its answer never arrives (a timeout after the store).
    const losing = (): SnodeTransport => {
      const direct = new SnodeHttp({ timeoutMs: 3_000, maxResponseBytes: 4 * 1024 * 1024 });
      return {
        async storageRpc(node, method, params) {
          const answer = await direct.storageRpc(node, method, params);
          if (method === 'store' && lose > 0) {
            lose--;
            throw new SnodeUnreachableError(`${node.ip}:${node.port}: no answer within 3000 ms`);
          }
          return answer;
        },
        close: () => direct.close(),
      };
    };
    const b = await bot({ storage: { transport: losing, maxAttempts: 1 } });
    const c = contact();
    const message = delivery(b, c.sessionId, 'exactly once');
    // No answer from the network: the delivery worker hands the message again later (no attempt spent).
    await expect(b.connector.deliver(message)).rejects.toThrow(SessionUnavailableError);
    expect(await b.connector.deliver(message)).toEqual({ ok: true });
    const got = await c.waitForMessages(1);
    await new Promise((resolve) => setTimeout(resolve, 300)); // let a second copy, if any, show
    expect([...got, ...(await c.receive())]).toHaveLength(1);
    expect(c.duplicates).toEqual([]);
  });

  it("carries the app's name as the bot's display name, and the conversation's disappearing setting as last seen", async () => {
    const b = await bot();
    const c = contact();
    await c.send(b.from, 'let us whisper', { disappearing: { type: 'deleteAfterSend', timerSeconds: 3600 } });
    await eventually(() => expect(b.received).toHaveLength(1), 10_000);
    expect(await b.connector.deliver(delivery(b, c.sessionId, 'whispering back', 'Support Desk'))).toEqual({ ok: true });
    const [reply] = await c.waitForMessages(1);
    expect(reply).toMatchObject({ text: 'whispering back', displayName: 'Support Desk', expirationType: 2, expirationTimer: 3600, sourceDevice: 1, proSigLength: 64 });
    // The contact turns disappearing messages off: the next reply carries no timer.
    await c.send(b.from, 'out loud again', { disappearing: { type: 'unknown', timerSeconds: 0 } });
    await eventually(() => expect(b.received).toHaveLength(2), 10_000);
    expect(await b.connector.deliver(delivery(b, c.sessionId, 'out loud', 'Support Desk'))).toEqual({ ok: true });
    const [plain] = await c.waitForMessages(1);
    expect(plain!.expirationTimer ?? 0).toBe(0);
    expect(plain!.expirationType ?? 0).toBe(0);
  });
});
