import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeSessionSwarm } from '../../../test/support/fake-session-swarm.ts';
import { SessionTestClient, type SwarmAccess } from '../../../test/support/session-test-client.ts';
import { identityFromSeed, newSeed, seedFromHex, type SessionIdentity } from './identity.ts';
import { SessionNetworkError, SessionRefusedError, SessionStorageClient, type RetrievedMessage } from './storage-client.ts';
import { buildTextMessage, openIncoming } from './wire.ts';
import { fakeSwarmStorage } from '../../../test/support/fake-swarm-storage.ts';

// Relay's Session client against the fake swarm (test/support/fake-session-swarm.ts) and a second,
// independent client (test/support/session-test-client.ts).

let swarm: FakeSessionSwarm;
let access: SwarmAccess;
/** The test client's view of the network clock (it signs with it, as a real client keeps an offset). */
let testClientOffsetMs = 0;
const clients: SessionStorageClient[] = [];

beforeAll(async () => {
  swarm = await FakeSessionSwarm.start({ swarms: 3, nodesPerSwarm: 3 });
  access = { seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed, clockOffsetMs: () => testClientOffsetMs };
});

afterAll(async () => {
  await swarm.close();
});

afterEach(() => {
  swarm.setClockOffset(0);
  lastTimestamp = 0;
  for (const client of clients.splice(0)) client.close();
});

function storageClient(overrides: Partial<ConstructorParameters<typeof SessionStorageClient>[0]> = {}): SessionStorageClient {
  const client = new SessionStorageClient(fakeSwarmStorage(swarm, overrides));
  clients.push(client);
  return client;
}

/** The last timestamp sendText used: Session's apps drop a second message with one sender's same timestamp (the connector's SendClock sees to it; here, this). */
let lastTimestamp = 0;

async function sendText(client: SessionStorageClient, from: SessionIdentity, to: string, text: string): Promise<string> {
  await client.swarmOf(to); // the clock offset comes with the first answer
  const timestamp = Math.max(client.networkNow(), lastTimestamp + 1);
  lastTimestamp = timestamp;
  const { hash } = await client.store(to, buildTextMessage({ sender: from, recipient: to, text, timestamp }), { timestamp });
  return hash;
}

async function pollAll(client: SessionStorageClient, bot: SessionIdentity, rounds = 12): Promise<RetrievedMessage[]> {
  const got: RetrievedMessage[] = [];
  for (let i = 0; i < rounds; i++) await client.poll(bot, async (m) => void got.push(m));
  return got;
}

describe('the independent test client', () => {
  it('derives the published Session IDs with its own code', () => {
    expect(SessionTestClient.fromSeed('39038c8988db02c1af44e8c847bd9713', access).sessionId).toBe('054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69');
    expect(SessionTestClient.fromSeed('8c0d6b3ad3d2d5c7c252d3816ba7f267', access).xSecretKeyHex).toBe('e89642bff0068aa119183fc4bec493cb5173643a2c4ed01187953641c7f13f61');
  });
});

describe('Relay ⇄ the fake swarm ⇄ the test client', () => {
  it('delivers what Relay sends to the test client, who reads it with its own code', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const client = storageClient();
    const hash = await sendText(client, bot, contact.sessionId, 'hello from Relay ✓');
    const [message] = await contact.waitForMessages(1);
    expect(message).toMatchObject({ hash, sender: bot.sessionId, text: 'hello from Relay ✓' });
    expect(message!.sigTimestamp).toBe(message!.envelopeTimestamp);
    expect(contact.rejected).toEqual([]);
    // Stored on every node of the recipient's swarm, under the same hash.
    for (const node of swarm.swarmOf(contact.sessionId)) expect(swarm.storedOn(node.index, contact.sessionId).map((m) => m.hash)).toEqual([hash]);
  });

  it('receives what the test client writes back, once', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const client = storageClient();
    const hash = await contact.send(bot.sessionId, 'a reply from the test client');
    const got = await pollAll(client, bot);
    expect(got.map((m) => m.hash)).toEqual([hash]);
    expect(openIncoming(bot, got[0]!.data)).toMatchObject({ kind: 'text', sender: contact.sessionId, text: 'a reply from the test client' });
  });

  it('refuses what the test client forges with a sigTimestamp unlike the envelope timestamp', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const now = Date.now();
    await contact.send(bot.sessionId, 'skewed', { timestamp: now, sigTimestamp: now - 1 });
    await contact.send(bot.sessionId, 'older app', { timestamp: now + 1, sigTimestamp: null });
    const opened = (await pollAll(storageClient(), bot)).map((m) => openIncoming(bot, m.data));
    expect(opened).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ kind: 'rejected', reason: 'sigTimestamp differs from the envelope timestamp' }),
        expect.objectContaining({ kind: 'text', text: 'older app' }),
      ]),
    );
  });

  it('keeps last_hash per node and hands each message on once, whichever node answers', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const client = storageClient();
    const botSwarm = swarm.swarmOf(bot.sessionId);
    // One node misses the stores and gets them later, in another order of row ids.
    swarm.pauseReplication(botSwarm[2]!.index);
    const first = await contact.send(bot.sessionId, 'one');
    const second = await contact.send(bot.sessionId, 'two');
    swarm.resumeReplication(botSwarm[2]!.index);
    const handled: string[] = [];
    let duplicates = 0;
    for (let i = 0; i < 15; i++) {
      const result = await client.poll(bot, async (m) => void handled.push(m.hash));
      duplicates += result.duplicates;
    }
    expect(handled.sort()).toEqual([first, second].sort());
    expect(duplicates).toBeGreaterThan(0); // other nodes had no last_hash of theirs: they sent them again
    const polled = botSwarm.filter((n) => client.lastHashOf(bot.sessionId, 0, n.ed25519) !== undefined);
    expect(polled.length).toBeGreaterThan(1);
    for (const node of polled) expect([first, second]).toContain(client.lastHashOf(bot.sessionId, 0, node.ed25519));
  });

  it('hands a message on again when the handler failed, and then once', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const client = storageClient();
    const hash = await contact.send(bot.sessionId, 'retry me');
    let calls = 0;
    await expect(client.poll(bot, async () => {
      calls++;
      throw new Error('the gateway is down');
    })).rejects.toThrow('the gateway is down');
    expect(client.wasHandled(hash)).toBe(false);
    const got = await pollAll(client, bot, 6);
    expect(got.map((m) => m.hash)).toEqual([hash]);
    expect(calls).toBe(1);
  });

  it('follows a 421: the account moved to another swarm after its swarm was cached', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const client = storageClient();
    const before = await client.swarmOf(contact.sessionId);
    const from = swarm.swarmOf(contact.sessionId)[0]!.swarmIndex;
    const to = (from + 1) % 3;
    swarm.moveAccount(contact.sessionId, to);
    const requestsBefore = swarm.requests.length;
    const hash = await sendText(client, bot, contact.sessionId, 'after the move');
    expect(swarm.requests.slice(requestsBefore).some((r) => r.method === 'store' && r.status === 421)).toBe(true);
    const after = await client.swarmOf(contact.sessionId);
    expect(after.map((n) => n.ed25519).sort()).toEqual(swarm.swarmOf(contact.sessionId).map((n) => n.ed25519).sort());
    expect(after.map((n) => n.ed25519)).not.toEqual(before.map((n) => n.ed25519));
    const [message] = await contact.waitForMessages(1);
    expect(message).toMatchObject({ hash, text: 'after the move' });
  });

  it('signs with the network time: a node clock 5 minutes ahead is followed', async () => {
    swarm.setClockOffset(5 * 60_000);
    testClientOffsetMs = 5 * 60_000;
    try {
      const bot = identityFromSeed(newSeed());
      const contact = SessionTestClient.random(access);
      const client = storageClient();
      await sendText(client, bot, contact.sessionId, 'from the future');
      expect(Math.abs(client.clockOffsetMs() + 5 * 60_000)).toBeLessThan(2_000);
      await contact.send(bot.sessionId, 'back');
      expect((await pollAll(client, bot, 4)).length).toBe(1);
    } finally {
      testClientOffsetMs = 0;
    }
  });

  it('answers a 406 by reading the node clock and trying again', async () => {
    const bot = identityFromSeed(newSeed());
    const client = storageClient();
    await client.swarmOf(bot.sessionId); // offset 0 learnt
    swarm.setClockOffset(-3 * 60_000); // the network's clock moves: our offset is now wrong
    const requestsBefore = swarm.requests.length;
    const result = await client.poll(bot, async () => undefined);
    expect(result.handled).toBe(0);
    const methods = swarm.requests.slice(requestsBefore).map((r) => `${r.method}:${r.status}`);
    expect(methods).toEqual(['retrieve:406', 'info:200', 'retrieve:200']);
  });

  it('tries another node of the swarm when one is down', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    // Direct: two of nine nodes down would also break most onion paths through them, which is the
    // onion transport's own test (onion/onion-transport.integration.spec.ts); here, the swarm's.
    const client = storageClient({ transport: 'direct' });
    const nodes = swarm.swarmOf(contact.sessionId);
    swarm.setDown(nodes[0]!.index, true);
    swarm.setDown(nodes[1]!.index, true);
    try {
      for (let i = 0; i < 4; i++) await sendText(client, bot, contact.sessionId, `message ${i}`);
      expect(await contact.waitForMessages(4)).toHaveLength(4);
    } finally {
      swarm.setDown(nodes[0]!.index, false);
      swarm.setDown(nodes[1]!.index, false);
    }
  });

  it('fails with a network error when no node of the swarm answers', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access);
    const client = storageClient({ requestTimeoutMs: 1_000 });
    await client.swarmOf(contact.sessionId);
    const nodes = swarm.swarmOf(contact.sessionId);
    for (const n of nodes) swarm.setDown(n.index, true);
    try {
      await expect(sendText(client, bot, contact.sessionId, 'nobody home')).rejects.toThrow(SessionNetworkError);
      expect(client.health().lastError).toBeDefined();
    } finally {
      for (const n of nodes) swarm.setDown(n.index, false);
    }
  });

  it('refuses a TTL out of bounds and a message over the size cap before sending', async () => {
    const client = storageClient();
    const to = identityFromSeed(newSeed()).sessionId;
    await expect(client.store(to, Buffer.from('x'), { ttlMs: 5_000 })).rejects.toThrow(SessionRefusedError);
    await expect(client.store(to, Buffer.from('x'), { ttlMs: 15 * 24 * 3_600_000 })).rejects.toThrow(SessionRefusedError);
    await expect(client.store(to, Buffer.alloc(76_801))).rejects.toThrow(SessionRefusedError);
    await expect(client.store('05abc', Buffer.from('x'))).rejects.toThrow(SessionRefusedError);
  });

  it('checks the seed nodes against their pinned certificate', async () => {
    const other = await FakeSessionSwarm.start({ swarms: 1, nodesPerSwarm: 1 });
    try {
      const client = storageClient({ seedCa: other.certificates.seed });
      await expect(client.swarmOf(identityFromSeed(newSeed()).sessionId)).rejects.toThrow(SessionNetworkError);
    } finally {
      await other.close();
    }
  });

  it('refreshes the pool from a pool node once it has one', async () => {
    const client = storageClient({ poolRefreshMs: 0 });
    const id = identityFromSeed(seedFromHex('39038c8988db02c1af44e8c847bd9713')).sessionId;
    await client.swarmOf(id);
    const before = swarm.requests.length;
    await client.syncClock();
    expect(swarm.requests.slice(before).map((r) => r.method)).toContain('oxend_request');
    expect(client.health().poolSize).toBe(9);
  });
});
