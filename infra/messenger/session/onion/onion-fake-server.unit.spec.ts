import sodiumNative from 'sodium-native';
import { describe, expect, it } from 'vitest';
import { channelDecrypt, channelEncrypt, decodeDict, encodeRelayDict, processOnionV2, processRelayed, type OnionHost, type OnionReply } from '../../../../test/support/fake-session-onion.ts';
import { buildOnion, combinedPayload, ephemeralKeyPair, layerKey, openAesGcm, openOnionAnswer, sealAesGcm } from './onion-layers.ts';
import { snodeKeys } from '../../../../test/support/snode-keys.ts';

// The fake storage server's onion processing (test/support/fake-session-onion.ts), nodes wired in
// process: it serves what the real server serves and refuses what it refuses, with its texts
// (session-storage-server oxenss/server/https.cpp, rpc/request_handler.cpp, rpc/onion_processing.cpp,
// server/omq.cpp).

const sodium = sodiumNative as unknown as {
  crypto_sign_keypair(pk: Buffer, sk: Buffer): void;
  crypto_sign_ed25519_pk_to_curve25519(x: Buffer, ed: Buffer): void;
  crypto_sign_ed25519_sk_to_curve25519(x: Buffer, ed: Buffer): void;
  crypto_scalarmult(q: Buffer, n: Buffer, p: Buffer): void;
  crypto_generichash(out: Buffer, input: Buffer): void;
  crypto_aead_xchacha20poly1305_ietf_encrypt(c: Buffer, m: Buffer, ad: null, nsec: null, npub: Buffer, k: Buffer): number;
};

interface Net {
  readonly nodes: { ed25519: string; x25519: string; host: OnionHost }[];
  readonly rpcs: { node: number; body: string }[];
  readonly hops: { node: number; hopNo: number; role: string }[];
  readonly down: Set<number>;
}

function network(size: number): Net {
  const net: Net = { nodes: [], rpcs: [], hops: [], down: new Set() };
  for (let i = 0; i < size; i++) {
    const { edPublic: edPk, xPublic: xPk, xSecret: xSk } = snodeKeys();
    const host: OnionHost = {
      keys: { xSecret: xSk, xPublic: xPk },
      knows: (ed) => net.nodes.some((n) => n.ed25519 === ed.toString('hex')),
      runRpc: (body) => {
        net.rpcs.push({ node: i, body });
        return { status: 200, body: { ok: true, t: 1_700_000_000_000 } };
      },
      relay: async (ed, message): Promise<OnionReply | undefined> => {
        const index = net.nodes.findIndex((n) => n.ed25519 === ed.toString('hex'));
        return net.down.has(index) ? undefined : processRelayed(net.nodes[index]!.host, message);
      },
      note: (hopNo, role) => void net.hops.push({ node: i, hopNo, role }),
    };
    net.nodes.push({ ed25519: edPk.toString('hex'), x25519: xPk.toString('hex'), host });
  }
  return net;
}

const rpc = Buffer.from(JSON.stringify({ method: 'info', params: {} }));
const textOf = (reply: OnionReply) => reply.body.toString('utf8');

describe('the fake server carries an onion as the storage server does', () => {
  it('relays through three nodes to the destination, which alone runs the RPC and seals the answer', async () => {
    const net = network(4);
    const [a, b, c, d] = net.nodes as [Net['nodes'][0], Net['nodes'][0], Net['nodes'][0], Net['nodes'][0]];
    const onion = buildOnion([a, b, c], d, rpc);
    const reply = await processOnionV2(a.host, onion.payload);
    expect(reply.status).toBe(200);
    expect(openOnionAnswer(reply.body, onion.answerKey)).toEqual({ status: 200, body: { ok: true, t: 1_700_000_000_000 } });
    expect(net.rpcs).toEqual([{ node: 3, body: rpc.toString() }]);
    // hop_no: 0 at the guard (https.cpp default), +1 at each OxenMQ hop (send_onion_to_sn).
    expect(net.hops).toEqual([
      { node: 0, hopNo: 0, role: 'relay' },
      { node: 1, hopNo: 1, role: 'relay' },
      { node: 2, hopNo: 2, role: 'relay' },
      { node: 3, hopNo: 3, role: 'destination' },
    ]);
  });

  it('answers 504 "Request time out" when a next node does not answer, 502 for an unknown one', async () => {
    const net = network(4);
    const [a, b, c, d] = net.nodes as [Net['nodes'][0], Net['nodes'][0], Net['nodes'][0], Net['nodes'][0]];
    net.down.add(2);
    expect(await processOnionV2(a.host, buildOnion([a, b, c], d, rpc).payload)).toEqual({ status: 504, body: Buffer.from('Request time out') });
    const stranger = { ed25519: 'ab'.repeat(32), x25519: d.x25519 };
    const reply = await processOnionV2(a.host, buildOnion([a, stranger], d, rpc).payload);
    expect(reply.status).toBe(502);
    expect(textOf(reply)).toBe(`Next node not found: ${'ab'.repeat(32)}`);
    expect(net.rpcs).toEqual([]);
  });

  it('refuses a bad outer request with 400 "Error parsing onion request: …"', async () => {
    const [a] = network(1).nodes as [Net['nodes'][0]];
    const eph = ephemeralKeyPair().publicKey.toString('hex');
    const cases: [Buffer, string][] = [
      [Buffer.from([1, 0]), 'Unexpected payload size; expected ciphertext size'],
      [Buffer.concat([Buffer.from([50, 0, 0, 0]), Buffer.alloc(10)]), 'Unexpected payload size 10, expected >= 50'],
      [combinedPayload(Buffer.alloc(40), {}), "[json.exception.out_of_range.403] key 'ephemeral_key' not found"],
      [combinedPayload(Buffer.alloc(40), { ephemeral_key: 5 }), '[json.exception.type_error.303] incompatible ReferenceType for get_ref, actual type is number'],
      [combinedPayload(Buffer.alloc(40), { ephemeral_key: 'zz' }), 'Hex key data is invalid: data is not hex'],
      [combinedPayload(Buffer.alloc(40), { ephemeral_key: 'abcd' }), 'Hex key data is invalid: expected 32 hex digits, received 4'],
      [combinedPayload(Buffer.alloc(40), { ephemeral_key: eph, enc_type: 'rot13' }), 'Invalid encryption type rot13'],
      [combinedPayload(Buffer.alloc(40), { ephemeral_key: eph, hop_no: 'one' }), '[json.exception.type_error.302] type must be number, but is string'],
    ];
    for (const [payload, why] of cases) expect(textOf(await processOnionV2(a.host, payload))).toBe(`Error parsing onion request: ${why}`);
    const notJson = Buffer.concat([Buffer.from([0, 0, 0, 0]), Buffer.from('{nope')]);
    const reply = await processOnionV2(a.host, notJson);
    expect(reply.status).toBe(400);
    expect(textOf(reply)).toMatch(/^Error parsing onion request: \[json\.exception\.parse_error\.101\]/);
  });

  it('answers 400 "Invalid ciphertext" to a layer that does not open, and a sealed "Invalid json" to one that opens wrong', async () => {
    const [a, b] = network(2).nodes as [Net['nodes'][0], Net['nodes'][0]];
    const eph = ephemeralKeyPair();
    const wrongKey = { ed25519: a.ed25519, x25519: b.x25519 };
    expect(textOf(await processOnionV2(a.host, buildOnion([wrongKey], b, rpc).payload))).toBe('Invalid ciphertext');
    const key = layerKey(eph.privateKey, Buffer.from(a.x25519, 'hex'));
    const outer = (inner: Buffer) => combinedPayload(sealAesGcm(key, inner), { ephemeral_key: eph.publicKey.toString('hex') });
    // No "headers", no "destination": the server's Invalid json, sealed with this layer's key.
    for (const inner of [combinedPayload(Buffer.alloc(3), { ephemeral_key: 'aa'.repeat(32) }), combinedPayload(Buffer.alloc(3), { destination: b.ed25519 }), Buffer.from([3, 0, 0, 0, 1, 2, 3])]) {
      const reply = await processOnionV2(a.host, outer(inner));
      expect(reply.status).toBe(200);
      const sealed = Buffer.from(reply.body.toString(), 'base64');
      expect(JSON.parse(openAesGcm(key, sealed).toString('utf8'))).toEqual({ status: 400, body: 'Invalid json' });
    }
    // "json" must be a boolean.
    const badFlag = await processOnionV2(a.host, outer(combinedPayload(rpc, { headers: '', json: 'yes' })));
    expect(openAesGcm(key, Buffer.from(badFlag.body.toString(), 'base64')).toString()).toBe('{"body":"Invalid json","status":400}');
  });

  it('refuses a relayed hop past hop 15, or without its data or key (server/omq.cpp)', async () => {
    const [a] = network(1).nodes as [Net['nodes'][0]];
    const eph = ephemeralKeyPair().publicKey;
    expect(textOf(await processRelayed(a.host, encodeRelayDict(Buffer.alloc(40), 'aes-gcm', eph, 16)))).toBe('onion request max path length exceeded');
    expect(textOf(await processRelayed(a.host, Buffer.from('d8:enc_type7:aes-gcme')))).toBe('Invalid internal onion request: required data payload not found');
    expect(textOf(await processRelayed(a.host, Buffer.from('d4:data3:abce')))).toBe('Invalid internal onion request: ephemeral key not found');
    expect(decodeDict(encodeRelayDict(Buffer.from('xyz'), 'xchacha20', eph, 2))).toEqual(
      new Map<string, Buffer | number>([
        ['data', Buffer.from('xyz')],
        ['enc_type', Buffer.from('xchacha20')],
        ['ephemeral_key', eph],
        ['hop_no', 2],
      ]),
    );
  });

  it('has the channel encryptions of the server tests (unit_test/encrypt.cpp), xchacha20 keyed client-first', () => {
    const alice = { sec: Buffer.from('7d446468c186d6fb3c83365ab77a37b1f9fa3e59eb9788a40ae2e9560f196f30', 'hex'), pub: Buffer.from('01c7391664840b2ef7126b3709dbac178ba5f3ef2335a62343d5df7da4a11c30', 'hex') };
    const bob = { xSecret: Buffer.from('f512f68e81a932aa2ff6d8723baa260a43a6f789d61c91b71f73e4f284e3600a', 'hex'), xPublic: Buffer.from('f7b99da2e25e3c399902641c707ae20ad72b63ed0cc487730ff0b3bcecf18609', 'hex') };
    const text = Buffer.from('Grumpy cat says no!');
    for (const [type, overhead] of [['aes-gcm', 28], ['xchacha20', 40], ['aes-cbc', 29]] as const) {
      const sealed = channelEncrypt(type, text, bob, alice.pub);
      expect(sealed.byteLength).toBe(text.byteLength + overhead);
      expect(channelDecrypt(type, sealed, bob, alice.pub)).toEqual(text);
    }
    // Alice as a client: BLAKE2b-32(aB ‖ A ‖ B), which Bob the server computes as BLAKE2b-32(bA ‖ A ‖ B).
    const shared = Buffer.alloc(32);
    sodium.crypto_scalarmult(shared, alice.sec, bob.xPublic);
    const key = Buffer.alloc(32);
    sodium.crypto_generichash(key, Buffer.concat([shared, alice.pub, bob.xPublic]));
    const nonce = Buffer.alloc(24, 9);
    const ct = Buffer.alloc(text.byteLength + 16);
    sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(ct, text, null, null, nonce, key);
    expect(channelDecrypt('xchacha20', Buffer.concat([nonce, ct]), bob, alice.pub)).toEqual(text);
  });
});
