import { describe, expect, it } from 'vitest';
import { identityFromSeed, newSeed, seedFromHex } from './identity.ts';
import { messageHash, openSealed, padMessage, sealForRecipient, SessionCryptoError, unpadMessage } from './message-crypto.ts';
import { decodeContent, decodeEnvelope, encodeContent, encodeEnvelope, unwrapWebSocketRequest, wrapInWebSocketRequest } from './messages.ts';
import { ProtobufError, ProtoWriter, readFields } from './protobuf.ts';
import sodium from 'sodium-native';
import { buildTextMessage, openIncoming } from './wire.ts';

// The storage server's message-hash vector (session-storage-server unit_test/service_node.cpp, MIT):
// a real one-to-one message as stored in 2021.
const VECTOR_PUBKEY = '05ffba630924aa1224bb930dde21c0d11bf004608f2812217f8ac812d6c7e3ad48';
const VECTOR_DATA = Buffer.from(
  'CAES1gIKA1BVVBIPL2FwaS92MS9tZXNzYWdlGrsCCAYovfqZv4YvQq8CVwutUBbhRzZw80TvR6uTYMKg9DSag' +
    'rtpeEpY31L7VxawfS8aSya0SiDa4J025SkjP13YX8g5pxgQ8Z6hgfNArMqr/tSijJ9miVKVDJ63YWE85O8kyW' +
    'F8tdtZR5j0Vxb+JH5U8Rg1bp7ftKk3OSf7JJMcrUUrDnctQHe540zJ2OTDJ03DfubkX5NmKqEu5nhXGxeeDv3' +
    'mTiL63fjtCvZYcikfjf6Nh1AX++HTgJ9SGoEIMastGUorFrmmXb2sbjHxNiJn0Radj/VzcA9VxYwBW5+AbGQ2' +
    'd9+vvm7X+8vh+jIenJfjxf+8CWER+9adNfb4YUH07I+godNCV0O0J05gzqfKdT7J8MBZzFBtKrbk8oCagPpTs' +
    'q/wZyYFKFKKD+q+zh704dYBILvs5yXUA96pIAA=',
  'base64',
);
const VECTOR_HASH = '4sMyAuaZlMwww3oFvfhazfw7ASx/7TDtO+TVc8aAjHs';

const bot = identityFromSeed(seedFromHex('39038c8988db02c1af44e8c847bd9713'));
const contact = identityFromSeed(seedFromHex('8c0d6b3ad3d2d5c7c252d3816ba7f267'));
const T = 1_764_000_000_123;

describe('storage server vectors', () => {
  it('computes the message hash of the vector', () => {
    expect(messageHash(VECTOR_PUBKEY, 0, VECTOR_DATA)).toBe(VECTOR_HASH);
  });

  it('puts the namespace into the hash unless it is 0', () => {
    expect(messageHash(VECTOR_PUBKEY, 5, VECTOR_DATA)).not.toBe(VECTOR_HASH);
  });

  it('reads the vector as WebSocket request → Envelope of a one-to-one message', () => {
    const request = unwrapWebSocketRequest(VECTOR_DATA);
    expect(request).toMatchObject({ verb: 'PUT', path: '/api/v1/message', id: 0n });
    const envelope = decodeEnvelope(request.body);
    expect(envelope.type).toBe(6);
    expect(envelope.timestamp).toBe(1616650861885);
    expect(envelope.source).toBeUndefined();
    // sealed-box overhead (48) + one padded block (159) + sender Ed25519 key (32) + signature (64)
    expect(envelope.content.byteLength).toBe(48 + 159 + 32 + 64);
  });

  it('writes the same bytes as the vector for the same fields', () => {
    const envelope = decodeEnvelope(unwrapWebSocketRequest(VECTOR_DATA).body);
    expect(wrapInWebSocketRequest(encodeEnvelope(envelope)).equals(VECTOR_DATA)).toBe(true);
  });

  it('lays out an outgoing message as the vector is laid out', () => {
    const wire = buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'hello', timestamp: T });
    expect(wire.subarray(0, 2).toString('hex')).toBe(VECTOR_DATA.subarray(0, 2).toString('hex'));
    const envelope = decodeEnvelope(unwrapWebSocketRequest(wire).body);
    expect(envelope).toMatchObject({ type: 6, timestamp: T });
    expect(envelope.content.byteLength).toBe(48 + 159 + 32 + 64);
  });
});

describe('padding', () => {
  it.each([0, 1, 157, 158, 159, 160, 317, 318, 1000])('pads %i bytes to a multiple of 160 less one and back', (n) => {
    const plain = Buffer.alloc(n, 7);
    const padded = padMessage(plain);
    expect((padded.byteLength + 1) % 160).toBe(0);
    expect(padded.byteLength).toBeGreaterThanOrEqual(n + 1);
    expect(padded[n]).toBe(0x80);
    expect(unpadMessage(padded).equals(plain)).toBe(true);
  });

  it('reads content sent without padding whole, as receivers do (session-desktop BufferPadding.ts)', () => {
    expect(unpadMessage(Buffer.from([1, 2, 0, 0])).equals(Buffer.from([1, 2, 0, 0]))).toBe(true);
    expect(unpadMessage(Buffer.from([0x0a, 0x02, 0x68, 0x69])).equals(Buffer.from([0x0a, 0x02, 0x68, 0x69]))).toBe(true);
    // libsession pads to whole 160-byte blocks: the marker, then zeros to the end of the block.
    const whole = Buffer.alloc(160);
    whole.set([0x0a, 0x01, 0x78, 0x80]);
    expect(unpadMessage(whole).equals(Buffer.from([0x0a, 0x01, 0x78]))).toBe(true);
  });

  it('refuses a message of zero bytes only', () => {
    expect(() => unpadMessage(Buffer.alloc(159))).toThrow(SessionCryptoError);
  });
});

describe('one-to-one text both ways', () => {
  it('round-trips text, timestamp and display name', () => {
    const text = 'héllo 👋 '.repeat(100);
    const wire = buildTextMessage({ sender: bot, recipient: contact.sessionId, text, timestamp: T, displayName: 'Support bot' });
    expect(openIncoming(contact, wire)).toEqual({ kind: 'text', sender: bot.sessionId, text, timestamp: T, displayName: 'Support bot', replayKey: expect.any(String), expiration: { type: 0, timer: 0 } });
  });

  it('sends sourceDevice 1 and a 64-byte proSig in the envelope, as libsession does, beside today\'s wrapper', () => {
    const wire = buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'hi', timestamp: T });
    const request = unwrapWebSocketRequest(wire);
    expect(request).toMatchObject({ verb: 'PUT', path: '/api/v1/message' });
    const envelope = decodeEnvelope(request.body);
    expect(envelope.sourceDevice).toBe(1);
    expect(envelope.proSig?.byteLength).toBe(64);
    // Two messages of the same text carry different proSig bytes (random, as for an account without Pro).
    const again = decodeEnvelope(unwrapWebSocketRequest(buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'hi', timestamp: T })).body);
    expect(again.proSig!.equals(envelope.proSig!)).toBe(false);
  });

  it('carries the conversation\'s disappearing-messages setting and the profile name with its time', () => {
    const wire = buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'hi', timestamp: T, displayName: 'Bot', expiration: { type: 2, timer: 3600 } });
    const opened = openSealed(contact, decodeEnvelope(unwrapWebSocketRequest(wire).body).content);
    const content = decodeContent(unpadMessage(opened.padded));
    expect(content).toMatchObject({ expirationType: 2, expirationTimer: 3600, sigTimestamp: T, dataMessage: { body: 'hi', displayName: 'Bot' } });
    const off = buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'hi', timestamp: T, expiration: { type: 0, timer: 0 } });
    const plain = decodeContent(unpadMessage(openSealed(contact, decodeEnvelope(unwrapWebSocketRequest(off).body).content).padded));
    expect(plain.expirationType).toBeUndefined();
    expect(plain.expirationTimer).toBeUndefined();
  });

  it('accepts any WebSocket verb and path, the empty ones of current apps included', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'from iOS' }, sigTimestamp: T }));
    const envelope = encodeEnvelope({ type: 6, timestamp: T, sourceDevice: 1, content: sealForRecipient(bot, contact.xPublicKey, padded), proSig: Buffer.alloc(64, 9) });
    for (const [verb, path] of [['', ''], ['PUT', '/api/v1/message'], ['GET', '/anything']] as const) {
      const wrapped = new ProtoWriter().varint(1, 1).bytes(2, new ProtoWriter().string(1, verb).string(2, path).bytes(3, envelope).finish()).finish();
      expect(openIncoming(contact, wrapped)).toMatchObject({ kind: 'text', text: 'from iOS', sender: bot.sessionId });
    }
    // Empty strings left out altogether, as a proto2 writer may.
    const bare = new ProtoWriter().varint(1, 1).bytes(2, new ProtoWriter().bytes(3, envelope).finish()).finish();
    expect(openIncoming(contact, bare)).toMatchObject({ kind: 'text', text: 'from iOS' });
  });

  it('accepts sigTimestamp 0 as a legacy client\'s (session-desktop ts/receiver/common.ts)', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'legacy' }, sigTimestamp: 0 }));
    const wire = wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T, content: sealForRecipient(bot, contact.xPublicKey, padded) }));
    expect(openIncoming(contact, wire)).toMatchObject({ kind: 'text', text: 'legacy' });
  });

  it('gives one replay key to one message however it is wrapped', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'once' }, sigTimestamp: T }));
    const sealed = sealForRecipient(bot, contact.xPublicKey, padded);
    const a = openIncoming(contact, wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T, content: sealed })));
    const b = openIncoming(contact, wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T, sourceDevice: 1, content: sealed, proSig: Buffer.alloc(64, 1) })));
    const other = openIncoming(contact, buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'once', timestamp: T + 1 }));
    expect(a.kind === 'text' && b.kind === 'text' && a.replayKey === b.replayKey).toBe(true);
    expect(other.kind === 'text' && a.kind === 'text' && other.replayKey !== a.replayKey).toBe(true);
  });

  it('signs payload ‖ sender Ed25519 key ‖ recipient X25519 key and seals to the recipient', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'x' }, sigTimestamp: T }));
    const opened = openSealed(contact, sealForRecipient(bot, contact.xPublicKey, padded));
    expect(opened.padded.equals(padded)).toBe(true);
    expect(opened.senderEdPublicKey.equals(bot.edPublicKey)).toBe(true);
    expect(opened.senderSessionId).toBe(bot.sessionId);
  });

  it('rejects a message for someone else', () => {
    const other = identityFromSeed(newSeed());
    const wire = buildTextMessage({ sender: bot, recipient: contact.sessionId, text: 'hi', timestamp: T });
    expect(openIncoming(other, wire)).toMatchObject({ kind: 'rejected', reason: 'the message does not open with this identity' });
  });

  it('rejects a forged sender (another key signed, the bot\'s key is claimed)', () => {
    const mallory = identityFromSeed(newSeed());
    const padded = padMessage(encodeContent({ dataMessage: { body: 'pay me' }, sigTimestamp: T }));
    const signature = Buffer.alloc(64);
    sodium.crypto_sign_detached(signature, Buffer.concat([padded, bot.edPublicKey, contact.xPublicKey]), mallory.edSecretKey);
    const inner = Buffer.concat([padded, bot.edPublicKey, signature]);
    const sealed = Buffer.alloc(inner.byteLength + 48);
    sodium.crypto_box_seal(sealed, inner, contact.xPublicKey);
    const wire = wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T, content: sealed }));
    expect(openIncoming(contact, wire)).toMatchObject({ kind: 'rejected', reason: 'the sender signature does not verify' });
  });

  it('rejects a sigTimestamp that differs from the envelope timestamp', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'hi' }, sigTimestamp: T }));
    const wire = wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T + 1, content: sealForRecipient(bot, contact.xPublicKey, padded) }));
    expect(openIncoming(contact, wire)).toMatchObject({ kind: 'rejected', reason: 'sigTimestamp differs from the envelope timestamp' });
  });

  it('accepts content without sigTimestamp, as clients do for older apps', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'old app', timestamp: T } }));
    const wire = wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T, content: sealForRecipient(bot, contact.xPublicKey, padded) }));
    expect(openIncoming(contact, wire)).toMatchObject({ kind: 'text', text: 'old app', sender: bot.sessionId });
  });

  it('tells sync copies, message request answers and empty messages apart from text', () => {
    const seal = (content: Buffer, to = contact) =>
      wrapInWebSocketRequest(encodeEnvelope({ type: 6, timestamp: T, content: sealForRecipient(bot, to.xPublicKey, padMessage(content)) }));
    expect(openIncoming(contact, seal(encodeContent({ dataMessage: { body: 'x', syncTarget: contact.sessionId }, sigTimestamp: T })))).toMatchObject({ kind: 'control', what: 'own-copy' });
    expect(openIncoming(contact, seal(encodeContent({ messageRequestResponse: true, sigTimestamp: T })))).toMatchObject({ kind: 'control', what: 'message-request-response' });
    expect(openIncoming(contact, seal(encodeContent({ dataMessage: { body: '' }, sigTimestamp: T })))).toMatchObject({ kind: 'unsupported', what: 'empty' });
    expect(openIncoming(bot, seal(encodeContent({ dataMessage: { body: 'note to self' }, sigTimestamp: T }), bot))).toMatchObject({ kind: 'control', what: 'own-copy' });
  });

  it('rejects other envelope types, wrappers without a body and garbage', () => {
    const padded = padMessage(encodeContent({ dataMessage: { body: 'hi' }, sigTimestamp: T }));
    const sealed = sealForRecipient(bot, contact.xPublicKey, padded);
    expect(openIncoming(contact, wrapInWebSocketRequest(encodeEnvelope({ type: 7, timestamp: T, content: sealed })))).toMatchObject({ kind: 'rejected' });
    const otherPath = new ProtoWriter()
      .varint(1, 1)
      .bytes(2, new ProtoWriter().string(1, 'PUT').string(2, '/api/v1/message').finish())
      .finish();
    expect(openIncoming(contact, otherPath)).toMatchObject({ kind: 'rejected', reason: 'the WebSocket request has no body' });
    const response = new ProtoWriter().varint(1, 2).bytes(2, new ProtoWriter().bytes(3, encodeEnvelope({ type: 6, timestamp: T, content: sealed })).finish()).finish();
    expect(openIncoming(contact, response)).toMatchObject({ kind: 'rejected', reason: 'not a WebSocket request message' });
    expect(openIncoming(contact, Buffer.from('not a protobuf at all'))).toMatchObject({ kind: 'rejected' });
    expect(openIncoming(contact, Buffer.alloc(0))).toMatchObject({ kind: 'rejected' });
  });
});

describe('protobuf codec', () => {
  it('skips unknown fields of every wire type', () => {
    const bytes = Buffer.concat([
      new ProtoWriter().varint(99, 5).finish(),
      Buffer.from([0x91, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]), // field 98, fixed64
      Buffer.from([0xad, 0x05, 1, 2, 3, 4]), // field 85, fixed32
      new ProtoWriter().bytes(1, new ProtoWriter().string(1, 'hi').finish()).bytes(97, Buffer.from('?')).varint(15, T).finish(),
    ]);
    expect(decodeContent(bytes)).toEqual({ dataMessage: { body: 'hi' }, sigTimestamp: T });
  });

  it('refuses truncated and malformed input', () => {
    expect(() => [...readFields(Buffer.from([0x0a, 0x05, 1]))]).toThrow(ProtobufError);
    expect(() => [...readFields(Buffer.from([0x08]))]).toThrow(ProtobufError);
    expect(() => [...readFields(Buffer.from([0x0b]))]).toThrow(ProtobufError); // group start
    expect(() => [...readFields(Buffer.from([0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]))]).toThrow(ProtobufError);
    expect(() => decodeContent(new ProtoWriter().varint(1, 3).finish())).toThrow(/wrong wire type/);
    expect(() => decodeEnvelope(new ProtoWriter().varint(1, 6).finish())).toThrow(/timestamp is missing/);
  });
});

