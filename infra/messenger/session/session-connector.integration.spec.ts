import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { displayLimitOf } from '../messenger-rules.ts';
import { BotIdentityMissingError, type InboundFromContact } from '../port.ts';
import { eventually } from '../../../test/support/eventually.ts';
import { sessionFixture, type SessionFixture } from '../../../test/support/session-fixture.ts';
import { SessionTestClient } from '../../../test/support/session-test-client.ts';
import { MemorySessionIdentityStore } from './identity-store.ts';
import { SessionConnector } from './session-connector.ts';
import { SessionIdentityTakenError, SessionUnavailableError } from './session-errors.ts';
import { fakeSwarmStorage } from '../../../test/support/fake-swarm-storage.ts';

// The Session connector on the fake swarm, with independent test clients as contacts. The shared
// MessengerConnector contract runs on the same fixture without its group cases
// (session-connector.contract.spec.ts); what is checked here goes further.

const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };
let f: SessionFixture;
let nextId = 0;
const delivery = (contactId: string, text: string, groupId?: string) => ({ messageId: `m-${++nextId}`, from: f.from, contactId, text, ...(groupId !== undefined ? { groupId } : {}) });

beforeEach(async () => {
  f = await sessionFixture();
});
afterEach(async () => {
  await f.teardown();
});

describe('Session connector: beyond the contract', () => {
  it("fails a contact id outside Session's format permanently, without handing it over or repeating it", async () => {
    const result = await f.connector.deliver(delivery('not a contact id 12345', 'x'));
    expect(result).toEqual({ ok: false, permanent: true, reason: 'Invalid contactId for session: expected a 66-character hex Session ID starting with 05' });
    expect(await f.handed()).toEqual([]);
  });

  it('takes a message of exactly the display limit in characters and fails one character more permanently', async () => {
    const limit = displayLimitOf('session');
    expect(await f.connector.deliver(delivery(f.contacts[0], '😀'.repeat(limit)))).toEqual({ ok: true });
    expect(await f.connector.deliver(delivery(f.contacts[0], 'a'.repeat(limit + 1)))).toEqual({ ok: false, permanent: true, reason: `Message exceeds the session limit of ${limit} characters` });
    const handed = await f.handed();
    expect(handed).toHaveLength(1);
    expect([...handed[0]!.text]).toHaveLength(limit);
  });

  it('hands on what contacts write, addressed to the bot identity, with its replay key as its id (the storage hash as the former one)', async () => {
    const received: InboundFromContact[] = [];
    await f.connector.listen(async (message) => void received.push(message));
    const hash = await f.clients[0].send(f.from, 'first');
    await f.clients[1].send(f.from, 'second');
    await eventually(() => expect(received).toHaveLength(2), 10_000);
    expect(received).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ messenger: 'session', to: f.from, contactId: f.contacts[0], text: 'first', externalId: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), formerExternalId: hash }),
        expect.objectContaining({ messenger: 'session', to: f.from, contactId: f.contacts[1], text: 'second' }),
      ]),
    );
    expect(received.every((m) => m.groupId === undefined)).toBe(true);
  });
});

describe('Session connector', () => {
  it('fails a group delivery permanently: Session groups are not supported', async () => {
    expect(await f.connector.deliver(delivery(f.contacts[0], 'to the group', f.groupId))).toEqual({ ok: false, permanent: true, reason: 'Session groups are not supported by Relay' });
  });

  it('round-trips: the bot writes, the contact answers, the bot hears the answer', async () => {
    const received: InboundFromContact[] = [];
    await f.connector.listen(async (message) => void received.push(message));
    expect(await f.connector.deliver(delivery(f.contacts[0], 'ping'))).toEqual({ ok: true });
    const [ping] = await f.clients[0].waitForMessages(1);
    expect(ping).toMatchObject({ sender: f.from, text: 'ping' });
    await f.clients[0].send(ping!.sender, 'pong');
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['pong']), 10_000);
    expect(received[0]!.contactId).toBe(f.contacts[0]);
  });

  it('provisions one identity per app-messenger, the same one when asked again', async () => {
    const again = await f.connector.provision('app-messenger-1');
    expect(again).toBe(f.from);
    const other = await f.connector.provision('app-messenger-2');
    expect(other).toMatch(/^05[0-9a-f]{64}$/);
    expect(other).not.toBe(f.from);
    expect((await f.connector.sessionIds()).sort()).toEqual([f.from, other].sort());
  });

  it("imports an operator's recovery phrase", async () => {
    const id = await f.connector.importIdentity('app-messenger-3', 'puffin luxury annoyed rustled memoir faxed smidgen puddle kiwi nylon utopia zinger kiwi');
    expect(id).toBe('054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69');
    expect(await f.connector.importIdentity('app-messenger-4', '8c0d6b3ad3d2d5c7c252d3816ba7f267')).toBe('05276137de3e4be913e0d30de7d59428446033a978893e788e91e4f2ddc02bd378');
  });

  it('defers a delivery from an identity it does not hold', async () => {
    await expect(f.connector.deliver({ ...delivery(f.contacts[0], 'x'), from: f.contacts[1] })).rejects.toThrow(BotIdentityMissingError);
  });

  it('reports health: reachable with its identities, unreachable when no node answers', async () => {
    expect(await f.connector.checkHealth()).toEqual({ reachable: true, identities: new Set([f.from]) });
    const cut = new SessionConnector({
      storage: { seedNodes: ['https://127.0.0.1:9'], requestTimeoutMs: 500 },
      identities: new MemorySessionIdentityStore(),
      log: quiet,
    });
    try {
      expect(await cut.checkHealth()).toEqual({ reachable: false, reason: 'The Session network cannot be reached (no seed or service node answered)' });
      const from = await cut.provision('a');
      // Unreachable: no attempt is spent (an UnavailableError, as for a daemon that is away).
      await expect(cut.deliver({ messageId: 'x', from, contactId: f.contacts[0], text: 'x' })).rejects.toThrow(SessionUnavailableError);
    } finally {
      await cut.close();
    }
  });

  it('loses nothing and records nothing twice when Relay stops between retrieve and record', async () => {
    const identities = new MemorySessionIdentityStore();
    const storage = fakeSwarmStorage(f.swarm);
    const first = new SessionConnector({ storage, identities, log: quiet, poll: { minMs: 30, maxMs: 100 } });
    const bot = await first.provision('restarting');
    // The gateway: records a message once per (messenger, to, externalId), as apps/pipeline/inbound-receiver.ts does.
    const recorded = new Map<string, string>();
    const record = async (m: InboundFromContact) => void (recorded.has(m.externalId!) || recorded.set(m.externalId!, m.text));
    for (let i = 0; i < 5; i++) await f.clients[0].send(bot, `message ${i}`);
    let handedToFirst = 0;
    await first.listen(async (message) => {
      handedToFirst++;
      if (handedToFirst === 3) {
        // The process stops here: the third message was retrieved but never recorded.
        void first.close();
        throw new Error('killed');
      }
      await record(message);
    });
    await eventually(() => expect(handedToFirst).toBeGreaterThanOrEqual(3), 10_000);
    await first.close();
    expect(recorded.size).toBe(2);
    const second = new SessionConnector({ storage, identities, log: quiet, poll: { minMs: 30, maxMs: 100 } });
    const handedToSecond: string[] = [];
    await second.listen(async (message) => {
      handedToSecond.push(message.externalId!);
      await record(message);
    });
    try {
      await eventually(() => expect(recorded.size).toBe(5), 10_000);
      expect([...recorded.values()].sort()).toEqual(['message 0', 'message 1', 'message 2', 'message 3', 'message 4']);
      // The nodes sent the recorded ones again (no last_hash after a restart): the gateway kept one of each.
      expect(handedToSecond.length).toBeGreaterThanOrEqual(5);
    } finally {
      await second.close();
    }
  });

  it('keeps the identity an app-messenger has: another import is refused, the same one is no error', async () => {
    const phrase = 'puffin luxury annoyed rustled memoir faxed smidgen puddle kiwi nylon utopia zinger kiwi';
    await expect(f.connector.importIdentity('app-messenger-1', phrase)).rejects.toThrow(new SessionIdentityTakenError(`The app-messenger app-messenger-1 already has the Session identity ${f.from}`));
    expect(await f.connector.importIdentity('app-messenger-5', phrase)).toBe('054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69');
    expect(await f.connector.importIdentity('app-messenger-5', phrase)).toBe('054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69');
    expect(await f.connector.provision('app-messenger-5')).toBe('054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69');
  });

  it('sends through a contact client written with other code, which checks every layer', async () => {
    const stranger = SessionTestClient.random({ seedUrl: f.swarm.seedUrl, seedCa: f.swarm.certificates.seed });
    expect(await f.connector.deliver(delivery(stranger.sessionId, 'checked'))).toEqual({ ok: true });
    expect(await stranger.waitForMessages(1)).toMatchObject([{ sender: f.from, text: 'checked' }]);
    expect(stranger.rejected).toEqual([]);
  });
});
