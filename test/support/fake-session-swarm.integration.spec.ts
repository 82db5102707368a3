import { createPrivateKey, sign } from 'node:crypto';
import { request } from 'node:https';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSessionSwarm, type FakeSnode } from './fake-session-swarm.ts';
import { SessionTestClient } from './session-test-client.ts';

// The fake swarm refuses what session-storage-server refuses, with the same status and text
// (oxenss/rpc/request_handler.cpp, client_rpc_endpoints.cpp, server/https.cpp).

let swarm: FakeSessionSwarm;
let user: SessionTestClient;
let home: FakeSnode;
let stranger: FakeSnode;
const edSeed = '39038c8988db02c1af44e8c847bd9713';
const edPrivate = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), Buffer.from(edSeed, 'hex'), Buffer.alloc(16)]), format: 'der', type: 'pkcs8' });
const sessionId = '054830367d369d94605247999a375dbd0a0f65fdec5de1535612bcb6d4de452c69';
const edPublic = 'f661a69453ef81a3b75bfcf954eb1f439d4d74edcab0e72a5c435ee418a907be';

beforeAll(async () => {
  swarm = await FakeSessionSwarm.start({ swarms: 2, nodesPerSwarm: 2 });
  user = SessionTestClient.fromSeed(edSeed, { seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
  home = swarm.swarmOf(sessionId)[0]!;
  stranger = swarm.nodes.find((n) => n.swarmIndex !== home.swarmIndex)!;
});

afterAll(async () => {
  await swarm.close();
});

function rpc(node: FakeSnode, body: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: unknown }> {
  const payload = Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = request(
      { host: node.ip, port: node.port, path: '/storage_rpc/v1', method: 'POST', rejectUnauthorized: false, headers: { 'content-type': 'application/json', ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode!, body: (res.headers['content-type'] ?? '').includes('json') ? JSON.parse(text) : text });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

const signed = (text: string) => sign(null, Buffer.from(text), edPrivate).toString('base64');
const store = (params: object) => ({ method: 'store', params: { pubkey: sessionId, timestamp: Date.now(), ttl: 60_000, data: Buffer.from('hello').toString('base64'), ...params } });
const retrieve = (params: object = {}) => {
  const timestamp = Date.now();
  return { method: 'retrieve', params: { pubkey: sessionId, pubkey_ed25519: edPublic, timestamp, signature: signed(`retrieve${timestamp}`), ...params } };
};

describe('the fake swarm, as strict as the storage server', () => {
  it('serves the seed list, the swarm and info with t and hf', async () => {
    const swarmAnswer = await rpc(stranger, { method: 'get_swarm', params: { pubkey: sessionId } });
    expect(swarmAnswer.status).toBe(200);
    const body = swarmAnswer.body as { snodes: { pubkey_ed25519: string; port_https: number; ip: string }[]; t: number; hf: number[] };
    expect(body.snodes.map((s) => s.pubkey_ed25519).sort()).toEqual(swarm.swarmOf(sessionId).map((n) => n.ed25519).sort());
    expect(Math.abs(body.t - Date.now())).toBeLessThan(2_000);
    expect(body.hf).toEqual([19, 3]);
    const info = await rpc(home, { method: 'info', params: {} });
    expect(info.body).toMatchObject({ version: [2, 8, 0], timestamp: expect.any(Number) });
  });

  it('answers 421 with the right swarm on a node of another swarm', async () => {
    const answer = await rpc(stranger, store({}));
    expect(answer.status).toBe(421);
    expect((answer.body as { snodes: { pubkey_ed25519: string }[] }).snodes.map((s) => s.pubkey_ed25519)).toContain(home.ed25519);
    expect((await rpc(stranger, retrieve())).status).toBe(421);
  });

  it('stores in namespace 0 without a signature, replicated, with the node signatures', async () => {
    const answer = await rpc(home, store({ data: Buffer.from('replicated').toString('base64') }));
    expect(answer.status).toBe(200);
    const body = answer.body as { hash: string; swarm: Record<string, { hash: string; signature: string; expiry: number }> };
    expect(Object.keys(body.swarm).sort()).toEqual(swarm.swarmOf(sessionId).map((n) => n.ed25519).sort());
    for (const node of swarm.swarmOf(sessionId)) expect(swarm.storedOn(node.index, sessionId).map((m) => m.hash)).toContain(body.hash);
    const again = await rpc(home, store({ data: Buffer.from('replicated').toString('base64') }));
    expect(Object.values((again.body as typeof body).swarm).every((r) => (r as { already?: boolean }).already === true)).toBe(true);
  });

  it.each([
    [{ ttl: 9_999 }, 403, 'Provided expiry/TTL is not valid.'],
    [{ ttl: 14 * 24 * 3_600_000 + 1 }, 403, 'Provided expiry/TTL is not valid.'],
    [{ timestamp: Date.now() + 60_000 }, 406, 'Timestamp error: check your clock'],
    [{ namespace: 5 }, 401, 'store: signature required to store to namespace 5'],
    [{ ttl: 'soon' }, 400, 'invalid request: Invalid value given for \'ttl\': "soon"'],
    [{ ttl: undefined }, 400, "invalid request: Required field 'expiry' or 'ttl' missing"],
    [{ expiry: Date.now() + 60_000 }, 400, "invalid request: Cannot specify both 'expiry' and 'ttl'"],
    [{ data: '***' }, 400, "invalid request: Invalid 'data' value: not base64 encoded"],
    [{ data: 'A'.repeat(102_404) }, 400, 'invalid request: Message body exceeds maximum allowed length of 76800 bytes'],
    [{ pubkey: '05abc' }, 400, 'invalid request: Pubkey must be 66 hex digits (33 bytes) long'],
    [{ namespace: 40_000 }, 400, "invalid request: Invalid value given for 'namespace': value out of range"],
  ])('refuses a store: %#', async (params, status, text) => {
    const answer = await rpc(home, store(params));
    expect(answer).toEqual({ status, body: text });
  });

  it('accepts an authenticated store to a private namespace and refuses a forged one', async () => {
    const timestamp = Date.now();
    const good = await rpc(home, store({ namespace: 5, timestamp, pubkey_ed25519: edPublic, signature: signed(`store5${timestamp}`) }));
    expect(good.status).toBe(200);
    const bad = await rpc(home, store({ namespace: 5, timestamp, pubkey_ed25519: edPublic, signature: signed(`store${timestamp}`) }));
    expect(bad).toEqual({ status: 401, body: 'store signature verification failed' });
  });

  it.each([
    [{ signature: undefined, pubkey_ed25519: undefined, timestamp: undefined }, 401, 'retrieve: request signature required'],
    [{ timestamp: Date.now() - 61_000 }, 406, 'retrieve timestamp too far from current time'],
    [{ signature: 'A'.repeat(86) }, 401, 'retrieve signature verification failed'],
    [{ signature: 'short' }, 400, 'invalid request: invalid signature: expected base64 encoded Ed25519 signature'],
    [{ pubkey_ed25519: '62267776b50f7a12376fb91647c296d8b9cd0b24743ec0b97f530b3907518ec3' }, 401, 'retrieve signature verification failed'],
    [{ last_hash: 'abc' }, 400, 'invalid request: Invalid last_hash: expected base64 (43 chars)'],
    [{ timestamp: 999_999_999 }, 400, "invalid request: Invalid timestamp for 'timestamp': timestamp must be in milliseconds"],
    [{ timestamp: '1700000000000' }, 400, "invalid request: Invalid value given for 'timestamp': expected integer timestamp (in milliseconds)"],
  ])('refuses a retrieve: %#', async (params, status, text) => {
    const base = retrieve();
    const answer = await rpc(home, { method: 'retrieve', params: { ...base.params, ...params } });
    expect(answer).toEqual({ status, body: text });
  });

  it('retrieves after last_hash on the node that knows it, everything on a node that does not', async () => {
    const other = swarm.swarmOf(sessionId).find((n) => n.index !== home.index)!;
    swarm.pauseReplication(other.index);
    const h1 = ((await rpc(home, store({ data: Buffer.from('m1').toString('base64') }))).body as { hash: string }).hash;
    const h2 = ((await rpc(home, store({ data: Buffer.from('m2').toString('base64') }))).body as { hash: string }).hash;
    expect(swarm.storedOn(other.index, sessionId).map((m) => m.hash)).not.toContain(h1);
    swarm.resumeReplication(other.index);
    expect(swarm.storedOn(other.index, sessionId).map((m) => m.hash).slice(-2)).toEqual([h1, h2]);
    const hashes = async (node: FakeSnode, params: object) => {
      const answer = await rpc(node, retrieve(params));
      expect(answer.status).toBe(200);
      const body = answer.body as { messages: { hash: string; expiration: number; timestamp: number; data: string }[]; more: boolean };
      for (const m of body.messages) expect(m).toEqual({ hash: expect.any(String), timestamp: expect.any(Number), expiration: expect.any(Number), data: expect.any(String) });
      return { hashes: body.messages.map((m) => m.hash), more: body.more };
    };
    expect(await hashes(home, { last_hash: h1 })).toEqual({ hashes: [h2], more: false });
    const everything = await hashes(home, { last_hash: 'B'.repeat(43) });
    expect(everything.hashes).toEqual(swarm.storedOn(home.index, sessionId).map((m) => m.hash));
    expect(everything.hashes.length).toBeGreaterThan(2);
    expect(await hashes(home, { max_count: 1 })).toEqual({ hashes: [everything.hashes[0]], more: true });
  });

  it('limits batches, refuses nesting, reports each sub-request', async () => {
    const many = { method: 'batch', params: { requests: Array.from({ length: 21 }, () => ({ method: 'info', params: {} })) } };
    expect(await rpc(home, many)).toEqual({ status: 400, body: 'invalid request: Invalid batch request: subrequest limit exceeded' });
    expect(await rpc(home, { method: 'batch', params: { requests: [{ method: 'batch', params: { requests: [] } }] } })).toEqual({
      status: 400,
      body: 'invalid request: Invalid batch subrequest: subrequests may not contain meta-requests',
    });
    expect(await rpc(home, { method: 'batch', params: { requests: [] } })).toEqual({ status: 400, body: 'invalid request: Invalid batch request: no valid "requests" field' });
    const mixed = await rpc(home, { method: 'batch', params: { requests: [{ method: 'info', params: {} }, store({ ttl: 1 })] } });
    expect(mixed.status).toBe(200);
    expect((mixed.body as { results: { code: number }[] }).results.map((r) => r.code)).toEqual([200, 403]);
    const sequence = await rpc(home, { method: 'sequence', params: { requests: [store({ ttl: 1 }), { method: 'info', params: {} }] } });
    expect((sequence.body as { results: unknown[] }).results).toHaveLength(1);
  });

  it('refuses malformed requests the way the server does', async () => {
    expect(await rpc(home, 'not json')).toEqual({ status: 400, body: 'invalid json' });
    expect(await rpc(home, { params: {} })).toEqual({ status: 400, body: 'invalid json: no `method` field' });
    expect(await rpc(home, { method: 'info' })).toEqual({ status: 400, body: 'invalid json: no `params` field' });
    expect(await rpc(home, { method: 'nope', params: {} })).toEqual({ status: 400, body: 'no method nope' });
    expect(await rpc(home, { method: 'info', params: {} }, { 'x-loki-long-poll': 'true' })).toEqual({
      status: 410,
      body: 'long polling is no longer supported, client upgrade required',
    });
  });

  it('takes messages from a client written with other code', async () => {
    const hash = await user.send(sessionId, 'hello me');
    expect(swarm.storedOn(home.index, sessionId).map((m) => m.hash)).toContain(hash);
  });
});
