import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeSessionSwarm } from '../../../test/support/fake-session-swarm.ts';
import { fakeSwarmStorage } from '../../../test/support/fake-swarm-storage.ts';
import { SessionTestClient } from '../../../test/support/session-test-client.ts';
import { identityFromSeed, newSeed } from './identity.ts';
import { MemorySessionIdentityStore } from './identity-store.ts';
import { decodeEnvelope, encodeEnvelope, unwrapWebSocketRequest, wrapInWebSocketRequest } from './messages.ts';
import { SESSION_SEED_CERTIFICATES } from './seed-certificates.ts';
import { SessionConnector } from './session-connector.ts';
import { SnodeHttp } from './snode-http.ts';
import type { HttpAnswer } from './snode-transport.ts';
import type { Snode } from './snode-pool.ts';
import type { SnodeTransport } from './snode-transport.ts';
import { SessionNetworkError, SessionStorageClient, type SessionStorageOptions } from './storage-client.ts';
import { messageHash } from './message-crypto.ts';
import type { InboundFromContact } from '../port.ts';

// How much Relay's Session client believes of the network: what a seed, a pool node or a storage
// node answers is checked as Session's own apps check it, and a hostile answer changes nothing.
// The hostile nodes are the fake swarm's real answers rewritten on the way (a transport between
// the client and the swarm), so every other part of the exchange stays faithful.

let swarm: FakeSessionSwarm;
const closing: { close(): unknown }[] = [];

beforeAll(async () => {
  swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 3, rateLimit: false });
});
afterAll(async () => {
  await swarm.close();
});
afterEach(async () => {
  for (const c of closing.splice(0)) await c.close();
});

type Rewrite = (node: Snode, method: string, params: object, answer: HttpAnswer) => HttpAnswer;

/** A transport that hands each call to the swarm and rewrites its answer, counting calls by method. */
function hostile(rewrite: Rewrite, calls: Map<string, number> = new Map()): () => SnodeTransport {
  return () => {
    const direct = new SnodeHttp({ timeoutMs: 3_000, maxResponseBytes: 4 * 1024 * 1024 });
    return {
      async storageRpc(node, method, params) {
        calls.set(method, (calls.get(method) ?? 0) + 1);
        return rewrite(node, method, params, await direct.storageRpc(node, method, params));
      },
      close: () => direct.close(),
    };
  };
}

function client(options: Partial<SessionStorageOptions> = {}): SessionStorageClient {
  const c = new SessionStorageClient(fakeSwarmStorage(swarm, options));
  closing.push(c);
  return c;
}

const access = () => ({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });

describe('seed nodes', () => {
  it("refuses a seed that does not present the real seeds' pinned certificate", async () => {
    const pinned = client({ seedCa: SESSION_SEED_CERTIFICATES });
    const contact = SessionTestClient.random(access());
    await expect(pinned.swarmOf(contact.sessionId)).rejects.toThrow(SessionNetworkError);
    expect(pinned.health().lastError).toMatch(/certificate|self.signed|issuer/i);
  });

  it('refuses node addresses that are not public (the fake network is all on loopback)', async () => {
    const strict = client({ allowPrivateAddresses: false });
    await expect(strict.swarmOf(SessionTestClient.random(access()).sessionId)).rejects.toThrow(SessionNetworkError);
    expect(strict.health().lastError).toBe(`no seed node gave a service-node list (seed 127.0.0.1:${new URL(swarm.seedUrl).port} gave no usable service nodes (${swarm.nodes.length} with an address that is not public))`);
  });
});

describe('pool refresh', () => {
  it('keeps only what three pool nodes agree on: one node naming a node of its own is not believed', async () => {
    const rogue = { public_ip: '203.0.113.9', storage_port: 443, pubkey_ed25519: 'ee'.repeat(32), pubkey_x25519: 'ff'.repeat(32) };
    let liar: string | undefined;
    const rewrite: Rewrite = (node, method, _params, answer) => {
      if (method !== 'oxend_request') return answer;
      liar ??= node.ed25519;
      if (node.ed25519 !== liar) return answer;
      const body = answer.body as { result: { service_node_states: object[] } };
      return { ...answer, body: { ...body, result: { ...body.result, service_node_states: [...body.result.service_node_states, rogue] } } };
    };
    const c = client({ transport: hostile(rewrite), allowPrivateAddresses: true, poolRefreshMs: 0, minAgreement: 3 });
    const contact = SessionTestClient.random(access());
    await c.swarmOf(contact.sessionId); // first pool: from the seed
    await c.syncClock(); // the pool is stale at once (poolRefreshMs 0): refreshed from three nodes
    expect(liar).toBeDefined();
    expect(c.health().poolSize).toBe(swarm.nodes.length);
  });
});

describe('storage nodes', () => {
  it('refuses a retrieved message whose hash is not the hash of its data, and takes the one whose hash is', async () => {
    const bot = identityFromSeed(newSeed());
    const contact = SessionTestClient.random(access());
    await contact.send(bot.sessionId, 'original');
    const rewrite: Rewrite = (_node, method, _params, answer) => {
      if (method !== 'retrieve') return answer;
      const body = answer.body as { messages: { hash: string; data: string }[] };
      // The node re-wraps the message (another proSig: other bytes) but keeps the old hash.
      const messages = body.messages.map((m) => {
        const envelope = decodeEnvelope(unwrapWebSocketRequest(Buffer.from(m.data, 'base64')).body);
        return { ...m, data: wrapInWebSocketRequest(encodeEnvelope({ ...envelope, proSig: Buffer.alloc(64, 7) })).toString('base64') };
      });
      return { ...answer, body: { ...body, messages } };
    };
    const c = client({ transport: hostile(rewrite) });
    const handled: Buffer[] = [];
    const result = await c.poll(bot, async (m) => void handled.push(m.data));
    expect(result).toMatchObject({ handled: 0, malformed: 1 });
    expect(handled).toEqual([]);
  });

  it('gives a re-wrapped replay the same id as its original, so the gateway records it once', async () => {
    const received: InboundFromContact[] = [];
    const connector = new SessionConnector({
      storage: fakeSwarmStorage(swarm),
      identities: new MemorySessionIdentityStore(),
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
      poll: { minMs: 50, maxMs: 100 },
    });
    closing.push(connector);
    const from = await connector.provision('am-replay');
    await connector.listen(async (m) => void received.push(m));
    const contact = SessionTestClient.random(access());
    const hash = await contact.send(from, 'pay 10 once');
    const stored = swarm.storedOn(swarm.swarmOf(from)[0]!.index, from).find((m) => m.hash === hash)!;
    // A node stores the same message again, re-wrapped: other bytes, a correct hash of its own.
    const envelope = decodeEnvelope(unwrapWebSocketRequest(stored.data).body);
    const replay = wrapInWebSocketRequest(encodeEnvelope({ ...envelope, proSig: Buffer.alloc(64, 1) }));
    const raw = client();
    await raw.store(from, replay);
    await new Promise((resolve) => setTimeout(resolve, 50));
    await expect.poll(() => received.length, { timeout: 10_000 }).toBe(2);
    expect(received[0]!.formerExternalId).toBe(hash);
    expect(received[1]!.formerExternalId).toBe(messageHash(from, 0, replay));
    expect(received[1]!.externalId).toBe(received[0]!.externalId);
  });

  it('never polls faster than its interval, whatever a node says of more messages', async () => {
    const calls = new Map<string, number>();
    const spin: Rewrite = (_node, method, _params, answer) => (method === 'retrieve' ? { ...answer, body: { messages: [], more: true, t: Date.now(), hf: [19, 3] } } : answer);
    const connector = new SessionConnector({
      storage: fakeSwarmStorage(swarm, { transport: hostile(spin, calls) }),
      identities: new MemorySessionIdentityStore(),
      log: { info: () => undefined, warn: () => undefined, error: () => undefined },
      poll: { minMs: 100, maxMs: 400 },
    });
    closing.push(connector);
    await connector.provision('am-spin');
    await connector.listen(async () => undefined);
    const started = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const elapsed = Date.now() - started;
    // One poll at once, then at most one per 100 ms.
    expect(calls.get('retrieve') ?? 0).toBeGreaterThan(2);
    expect(calls.get('retrieve') ?? 0).toBeLessThanOrEqual(Math.floor(elapsed / 100) + 2);
  });
});
