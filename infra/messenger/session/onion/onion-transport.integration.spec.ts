import { request } from 'node:https';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { RELAY_PATH } from '../../../../test/support/fake-session-onion.ts';
import { FakeSessionSwarm, type OnionHopRecord } from '../../../../test/support/fake-session-swarm.ts';
import { fakeSwarmStorage } from '../../../../test/support/fake-swarm-storage.ts';
import { identityFromSeed, newSeed, type SessionIdentity } from '../identity.ts';
import { SnodeHttp, SnodeUnreachableError } from '../snode-http.ts';
import { SessionNetworkError, SessionStorageClient } from '../storage-client.ts';
import { OnionTransport } from './onion-transport.ts';

// Relay's storage client through onion paths (OnionTransport) against the fake swarm, whose nodes
// serve /onion_req/v2 as session-storage-server does (test/support/fake-session-onion.ts).

let swarm: FakeSessionSwarm;
const closing: { close(): void }[] = [];

beforeAll(async () => {
  swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 4 });
});

afterAll(async () => {
  await swarm.close();
});

afterEach(() => {
  swarm.setClockOffset(0);
  for (const c of closing.splice(0)) c.close();
});

function onionClient(on: FakeSessionSwarm = swarm, overrides: Partial<ConstructorParameters<typeof SessionStorageClient>[0]> = {}): { client: SessionStorageClient; transport: () => OnionTransport } {
  let transport: OnionTransport | undefined;
  const client = new SessionStorageClient(fakeSwarmStorage(on, { transport: (pool) => (transport = new OnionTransport({ pool, timeoutMs: 5_000 })), ...overrides }));
  closing.push(client);
  return { client, transport: () => transport! };
}

/** The onion hops recorded since `from`, in groups of one request each (the calls are sequential). */
function onionRequests(from: number): OnionHopRecord[][] {
  const groups: OnionHopRecord[][] = [];
  let group: OnionHopRecord[] = [];
  for (const hop of swarm.onionHops.slice(from)) {
    group.push(hop);
    if (hop.role === 'destination') {
      groups.push(group);
      group = [];
    }
  }
  return groups;
}

async function storeAndPoll(client: SessionStorageClient, bot: SessionIdentity, text: string): Promise<string> {
  const { hash } = await client.store(bot.sessionId, Buffer.from(text));
  const got: string[] = [];
  for (let i = 0; i < 4 && !got.includes(hash); i++) await client.poll(bot, async (m) => void got.push(m.hash));
  expect(got).toContain(hash);
  return hash;
}

describe('storage calls through onion paths', () => {
  it('stores and retrieves, every request reaching its node as the destination of a 3-hop onion', async () => {
    const { client, transport } = onionClient();
    const bot = identityFromSeed(newSeed());
    const requestsBefore = swarm.requests.length;
    const hopsBefore = swarm.onionHops.length;
    const hash = await storeAndPoll(client, bot, 'through the onion');
    for (const node of swarm.swarmOf(bot.sessionId)) expect(swarm.storedOn(node.index, bot.sessionId).map((m) => m.hash)).toEqual([hash]);

    const requests = swarm.requests.slice(requestsBefore);
    expect(requests.map((r) => r.method)).toEqual(expect.arrayContaining(['get_swarm', 'store', 'retrieve']));
    expect(requests.every((r) => r.via === 'onion')).toBe(true);
    const onions = onionRequests(hopsBefore);
    expect(onions).toHaveLength(requests.length);
    const guards = new Set(transport().currentPaths().map((p) => p[0]!.ed25519));
    for (const hops of onions) {
      expect(hops.map((h) => [h.hopNo, h.role])).toEqual([
        [0, 'relay'],
        [1, 'relay'],
        [2, 'relay'],
        [3, 'destination'],
      ]);
      expect(new Set(hops.map((h) => h.node)).size).toBe(4); // the destination is never on its own path
      expect(guards.has(swarm.nodes[hops[0]!.node]!.ed25519)).toBe(true);
    }
    expect(transport().health()).toEqual({ ready: true });
  });

  it('refreshes the pool from a node through an onion too (only the seed is asked directly)', async () => {
    const { client } = onionClient(swarm, { poolRefreshMs: 0 });
    const requestsBefore = swarm.requests.length;
    await client.swarmOf(identityFromSeed(newSeed()).sessionId);
    await client.syncClock();
    const requests = swarm.requests.slice(requestsBefore);
    expect(requests.map((r) => r.method)).toContain('oxend_request');
    expect(requests.every((r) => r.via === 'onion')).toBe(true);
    expect(client.health().poolSize).toBe(8);
  });

  it("hands the destination's 421 and 406 to the client, which follows them through onions", async () => {
    const { client } = onionClient();
    const bot = identityFromSeed(newSeed());
    await client.swarmOf(bot.sessionId);
    const from = swarm.swarmOf(bot.sessionId)[0]!.swarmIndex;
    swarm.moveAccount(bot.sessionId, 1 - from);
    let requestsBefore = swarm.requests.length;
    await storeAndPoll(client, bot, 'moved');
    expect(swarm.requests.slice(requestsBefore).map((r) => `${r.method}:${r.status}`)).toEqual(expect.arrayContaining(['store:421', 'store:200', 'retrieve:200']));
    swarm.setClockOffset(-3 * 60_000); // the network's clock moves: the client's offset is now wrong
    requestsBefore = swarm.requests.length;
    await client.store(bot.sessionId, Buffer.from('late'));
    expect(swarm.requests.slice(requestsBefore).map((r) => `${r.method}:${r.status}`)).toEqual(['store:406', 'info:200', 'store:200']);
    expect(Math.abs(client.clockOffsetMs() - 3 * 60_000)).toBeLessThan(2_000);
    expect(swarm.requests.slice(requestsBefore).every((r) => r.via === 'onion')).toBe(true);
  });

  it('rebuilds a path whose relay went down, and every call still succeeds', async () => {
    const { client, transport } = onionClient();
    const bot0 = identityFromSeed(newSeed());
    await client.swarmOf(bot0.sessionId); // paths are built for the first call
    const relay = transport().currentPaths()[0]![1]!;
    const index = swarm.nodes.findIndex((n) => n.ed25519 === relay.ed25519);
    // A recipient outside the down node's swarm, so that only paths fail (not destinations).
    let bot = identityFromSeed(newSeed());
    while (swarm.swarmOf(bot.sessionId).some((n) => n.index === index)) bot = identityFromSeed(newSeed());
    // Its swarm known before the node goes down: each call below is then one onion call (a first
    // call that also asked for the swarm could fail on the broken path twice).
    await client.swarmOf(bot.sessionId);
    swarm.setDown(index, true);
    const requestsBefore = swarm.requests.length;
    try {
      let calls = 0;
      while (transport().currentPaths().flat().some((n) => n.ed25519 === relay.ed25519)) {
        expect(++calls).toBeLessThan(60);
        await client.store(bot.sessionId, Buffer.from(`call ${calls}`));
      }
      expect(calls).toBeGreaterThanOrEqual(3); // a path is dropped at its third failure; a call retries on another path
      await storeAndPoll(client, bot, 'after the rebuild');
      expect(transport().currentPaths().flat().map((n) => n.ed25519)).not.toContain(relay.ed25519);
      expect(transport().health()).toEqual({ ready: true });
      expect(swarm.requests.slice(requestsBefore).some((r) => r.node === index)).toBe(false);
    } finally {
      swarm.setDown(index, false);
    }
  });

  it('is not ready, and no call leaves, when the pool is too small for a path and a destination', async () => {
    const small = await FakeSessionSwarm.start({ swarms: 1, nodesPerSwarm: 3 });
    try {
      const { client, transport } = onionClient(small, { maxAttempts: 2 });
      expect(transport().health()).toEqual({ ready: false, reason: expect.stringMatching(/^no onion path can be built: the pool has 0 node/) });
      await expect(client.swarmOf(identityFromSeed(newSeed()).sessionId)).rejects.toThrow(SessionNetworkError);
      expect(transport().health()).toEqual({
        ready: false,
        reason: 'no onion path can be built: the pool has 3 node(s) with an X25519 key; a path of 3 and a destination outside it need 4',
      });
      const node = small.nodes[0]!;
      await expect(transport().storageRpc({ ip: node.ip, port: node.port, ed25519: node.ed25519, x25519: node.x25519 }, 'info', {})).rejects.toThrow(SnodeUnreachableError);
      expect(small.requests).toEqual([]);
      expect(small.onionHops).toEqual([]);
    } finally {
      await small.close();
    }
  });

  it('says every path attempt failed when no guard answers', async () => {
    const { client, transport } = onionClient(swarm, { maxAttempts: 1 });
    await client.swarmOf(identityFromSeed(newSeed()).sessionId);
    const guards = transport().currentPaths().map((p) => swarm.nodes.findIndex((n) => n.ed25519 === p[0]!.ed25519));
    for (const g of guards) swarm.setDown(g, true);
    try {
      const target = swarm.nodes.find((n) => !transport().currentPaths().flat().some((p) => p.ed25519 === n.ed25519))!;
      const snode = { ip: target.ip, port: target.port, ed25519: target.ed25519, x25519: target.x25519 };
      await expect(transport().storageRpc(snode, 'info', {})).rejects.toThrow(SnodeUnreachableError);
      expect(transport().health()).toEqual({ ready: false, reason: expect.stringMatching(/^no onion path can be built: every path attempt failed/) });
    } finally {
      for (const g of guards) swarm.setDown(g, false);
    }
  });

  it('leaves out a node whose X25519 key cannot be sealed for, and cannot reach it as a destination', async () => {
    const bad = swarm.nodes[0]!;
    const pool = swarm.nodes.map((n) => ({ ip: n.ip, port: n.port, ed25519: n.ed25519, x25519: n === bad ? '00'.repeat(32) : n.x25519 }));
    const transport = new OnionTransport({ pool: () => pool, timeoutMs: 5_000 });
    closing.push(transport);
    for (const target of pool.slice(1)) {
      for (let i = 0; i < 3; i++) expect((await transport.storageRpc(target, 'info', {})).status).toBe(200);
    }
    expect(transport.currentPaths().flat().map((n) => n.ed25519)).not.toContain(bad.ed25519);
    await expect(transport.storageRpc(pool[0]!, 'info', {})).rejects.toThrow(SnodeUnreachableError);
  });

  it("is served over HTTPS by the fake as by the server: 400 for a bad onion, the nodes' own hop closed to clients", async () => {
    const node = swarm.nodes[0]!;
    const http = new SnodeHttp({ timeoutMs: 3_000, maxResponseBytes: 1_000_000 });
    closing.push(http);
    const answer = await http.onionRequest({ ip: node.ip, port: node.port, ed25519: node.ed25519 }, Buffer.from([1, 2]));
    expect({ status: answer.status, body: answer.body.toString() }).toEqual({ status: 400, body: 'Error parsing onion request: Unexpected payload size; expected ciphertext size' });
    const relay = await new Promise<number>((resolve, reject) => {
      const req = request({ host: node.ip, port: node.port, path: RELAY_PATH, method: 'POST', rejectUnauthorized: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end('d4:data0:e');
    });
    expect(relay).toBe(404);
  });
});
