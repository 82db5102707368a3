import sodiumNative from 'sodium-native';
import { describe, expect, it } from 'vitest';
import {
  channelDecrypt,
  channelEncrypt,
  parseCombinedPayload,
  processInnerRequest,
  wrapProxyResponse,
  type NodeKeys,
} from '../../../../test/support/fake-session-onion.ts';
import { buildOnion, combinedPayload, layerKey, OnionAnswerError, openAesGcm, openOnionAnswer, sealAesGcm, x25519KeyPair } from './onion-layers.ts';
import { snodeKeys } from '../../../../test/support/snode-keys.ts';

// The client's layers against the storage server's side of the protocol as test/support/
// fake-session-onion.ts has it, written from session-storage-server (not from this client).

const sodium = sodiumNative as unknown as {
  crypto_sign_keypair(pk: Buffer, sk: Buffer): void;
  crypto_sign_ed25519_pk_to_curve25519(x: Buffer, ed: Buffer): void;
  crypto_sign_ed25519_sk_to_curve25519(x: Buffer, ed: Buffer): void;
};

// session-storage-server unit_test/encrypt.cpp: the key pairs and plaintext of its channel tests.
const plaintext = Buffer.from('Grumpy cat says no!');
const alice = { pub: '01c7391664840b2ef7126b3709dbac178ba5f3ef2335a62343d5df7da4a11c30', sec: '7d446468c186d6fb3c83365ab77a37b1f9fa3e59eb9788a40ae2e9560f196f30' };
const bob = { pub: 'f7b99da2e25e3c399902641c707ae20ad72b63ed0cc487730ff0b3bcecf18609', sec: 'f512f68e81a932aa2ff6d8723baa260a43a6f789d61c91b71f73e4f284e3600a' };
const keysOf = (k: { pub: string; sec: string }): NodeKeys => ({ xSecret: Buffer.from(k.sec, 'hex'), xPublic: Buffer.from(k.pub, 'hex') });

// session-storage-server unit_test/onion_requests.cpp: `"\x0a\0\0\0ciphertext"` then the JSON.
const prefix = Buffer.concat([Buffer.from([0x0a, 0, 0, 0]), Buffer.from('ciphertext')]);

interface FakeNode {
  readonly ed25519: string;
  readonly x25519: string;
  readonly keys: NodeKeys;
}

/** A node with keys as a storage server has them: X25519 derived from its Ed25519 key. */
function node(): FakeNode {
  const { edPublic, xPublic, xSecret } = snodeKeys();
  return { ed25519: edPublic.toString('hex'), x25519: xPublic.toString('hex'), keys: { xSecret, xPublic } };
}

describe('layer encryption, against the vectors of the storage server (unit_test/encrypt.cpp)', () => {
  it('derives the published X25519 public keys from their secrets', () => {
    expect(x25519KeyPair(Buffer.from(alice.sec, 'hex')).publicKey.toString('hex')).toBe(alice.pub);
    expect(x25519KeyPair(Buffer.from(bob.sec, 'hex')).publicKey.toString('hex')).toBe(bob.pub);
  });

  it('makes the same layer key on both sides, and the server opens what the client sealed', () => {
    const aliceKeys = x25519KeyPair(Buffer.from(alice.sec, 'hex'));
    const bobKeys = x25519KeyPair(Buffer.from(bob.sec, 'hex'));
    const key = layerKey(aliceKeys.privateKey, Buffer.from(bob.pub, 'hex'));
    expect(layerKey(bobKeys.privateKey, Buffer.from(alice.pub, 'hex'))).toEqual(key);
    const sealed = sealAesGcm(key, plaintext);
    // encrypt.cpp: "CHECK(ctext_bob.size() == plaintext_data.size() + 28)" (12-byte IV, 16-byte tag).
    expect(sealed.byteLength).toBe(plaintext.byteLength + 28);
    expect(channelDecrypt('aes-gcm', sealed, keysOf(bob), Buffer.from(alice.pub, 'hex'))).toEqual(plaintext);
    // And the server's answer (sealed by Bob for Alice) opens with the same key.
    expect(openAesGcm(key, channelEncrypt('aes-gcm', plaintext, keysOf(bob), Buffer.from(alice.pub, 'hex')))).toEqual(plaintext);
  });

  it('refuses a sealed value that was changed or is too short', () => {
    const key = layerKey(x25519KeyPair(Buffer.from(alice.sec, 'hex')).privateKey, Buffer.from(bob.pub, 'hex'));
    const sealed = sealAesGcm(key, plaintext);
    sealed[15] = sealed[15]! ^ 1;
    expect(() => openAesGcm(key, sealed)).toThrow();
    expect(() => channelDecrypt('aes-gcm', sealed, keysOf(bob), Buffer.from(alice.pub, 'hex'))).toThrow();
    expect(() => openAesGcm(key, Buffer.alloc(27))).toThrow(/too short/);
  });
});

describe('the combined payload, against the server parser (unit_test/onion_requests.cpp)', () => {
  it('reads the vectors of the server tests as the server does', () => {
    expect(processInnerRequest(Buffer.concat([prefix, Buffer.from('{"headers": "something"}')]))).toEqual({ kind: 'final', body: Buffer.from('ciphertext'), json: false, base64: true });
    expect(processInnerRequest(Buffer.concat([prefix, Buffer.from('{"host": "host", "target": "target"}')]))).toEqual({ kind: 'server', host: 'host', target: 'target', port: 443, protocol: 'https' });
    expect(processInnerRequest(Buffer.concat([prefix, Buffer.from('{"host": "host", "target": "target", "port": 80, "protocol": "http"}')]))).toMatchObject({ port: 80, protocol: 'http' });
    const relay = processInnerRequest(
      Buffer.concat([prefix, Buffer.from('{"destination": "ffffeeeeddddccccbbbbaaaa9999888877776666555544443333222211110000", "ephemeral_key": "0000111122223333444455556666777788889999000011112222333344445555"}')]),
    );
    expect(relay).toEqual({
      kind: 'node',
      ciphertext: Buffer.from('ciphertext'),
      ephemeralKey: Buffer.from('0000111122223333444455556666777788889999000011112222333344445555', 'hex'),
      encType: 'aes-gcm',
      next: Buffer.from('ffffeeeeddddccccbbbbaaaa9999888877776666555544443333222211110000', 'hex'),
    });
  });

  it('writes what the server parser reads: a little-endian length, the bytes, the JSON', () => {
    const written = combinedPayload(Buffer.from('ciphertext'), { headers: 'something' });
    expect(written.subarray(0, 14)).toEqual(prefix);
    expect(parseCombinedPayload(written)).toEqual({ ciphertext: Buffer.from('ciphertext'), json: { headers: 'something' } });
    const big = Buffer.alloc(70_000, 7);
    expect(parseCombinedPayload(combinedPayload(big, { a: 1 })).ciphertext.equals(big)).toBe(true);
  });
});

describe('an onion, peeled by the server side hop by hop', () => {
  const body = Buffer.from(JSON.stringify({ method: 'retrieve', params: { pubkey: '05'.padEnd(66, 'a'), namespace: 0 } }));

  it('takes each node to the next by its Ed25519 key, and the destination finds the RPC body', () => {
    const [guard, middle, last, destination] = [node(), node(), node(), node()] as const;
    const onion = buildOnion([guard, middle, last], destination, body);
    const outer = parseCombinedPayload(onion.payload);
    expect(outer.json).toEqual({ ephemeral_key: expect.stringMatching(/^[0-9a-f]{64}$/), enc_type: 'aes-gcm' });
    let sealed: Buffer = outer.ciphertext;
    let ephemeral: Buffer = Buffer.from((outer.json as { ephemeral_key: string }).ephemeral_key, 'hex');
    for (const [hop, next] of [
      [guard, middle],
      [middle, last],
      [last, destination],
    ] as const) {
      const inner = processInnerRequest(channelDecrypt('aes-gcm', sealed, hop.keys, ephemeral));
      if (inner.kind !== 'node') throw new Error(`a relay layer was read as ${inner.kind}`);
      expect(inner.next.toString('hex')).toBe(next.ed25519);
      expect(inner.encType).toBe('aes-gcm');
      sealed = inner.ciphertext;
      ephemeral = inner.ephemeralKey;
    }
    const final = processInnerRequest(channelDecrypt('aes-gcm', sealed, destination.keys, ephemeral));
    expect(final).toEqual({ kind: 'final', body, json: true, base64: true });
    // Only the right node opens each layer.
    expect(() => channelDecrypt('aes-gcm', outer.ciphertext, middle.keys, Buffer.from((outer.json as { ephemeral_key: string }).ephemeral_key, 'hex'))).toThrow();

    // The destination's answer, as the server wraps it, opens with the client's answer key.
    const reply = wrapProxyResponse(destination.keys, ephemeral, 'aes-gcm', 200, { messages: [], more: false, t: 1 }, true, true);
    expect(reply.status).toBe(200);
    expect(openOnionAnswer(reply.body, onion.answerKey)).toEqual({ status: 200, body: { messages: [], more: false, t: 1 } });
    // A text answer stays text; a double-encoded JSON answer ("json" not honoured) is read as JSON.
    expect(openOnionAnswer(wrapProxyResponse(destination.keys, ephemeral, 'aes-gcm', 406, 'Timestamp error: check your clock', true, true).body, onion.answerKey)).toEqual({
      status: 406,
      body: 'Timestamp error: check your clock',
    });
    expect(openOnionAnswer(wrapProxyResponse(destination.keys, ephemeral, 'aes-gcm', 421, { snodes: [] }, false, true).body, onion.answerKey)).toEqual({ status: 421, body: { snodes: [] } });
    // A relay's own refusal is sealed with that relay's key, not the destination's.
    expect(() => openOnionAnswer(wrapProxyResponse(middle.keys, ephemeral, 'aes-gcm', 400, 'Invalid json', false, true).body, onion.answerKey)).toThrow(OnionAnswerError);
    expect(() => openOnionAnswer(Buffer.from('Request time out'), onion.answerKey)).toThrow(OnionAnswerError);
  });

  it('refuses a path holding the destination or a node twice', () => {
    const [a, b, c] = [node(), node(), node()] as const;
    expect(() => buildOnion([a, b, c], b, body)).toThrow(/only once/);
    expect(() => buildOnion([a, b, a], c, body)).toThrow(/only once/);
    expect(() => buildOnion([], c, body)).toThrow();
  });
});
