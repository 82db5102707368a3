import sodiumNative from 'sodium-native';
import { describe, expect, it } from 'vitest';
import { SessionTestClient, type ContentSpec, type SessionFormat, type WireOptions } from './session-test-client.ts';
import { edSign, encryptForRecipient, identityFromSeed, sealTo } from './session-test-client/crypto.ts';
import { FORMATS, padDesktop, padLibsession, unpadLenient, wrap } from './session-test-client/formats.ts';
import { encode, lengthDelimited, readFields, varintField, type WireField } from './session-test-client/protobuf.ts';

/**
 * The test client's bytes, field by field, against the layouts in the Session apps' sources. The
 * expected field numbers are written out here from those sources (not taken from the client's
 * table), and the ciphertext is opened with libsodium's own calls (not the client's sealed box).
 */
const sodium = sodiumNative as unknown as {
  crypto_box_seal_open(m: Buffer, c: Buffer, pk: Buffer, sk: Buffer): boolean;
  crypto_sign_verify_detached(sig: Buffer, m: Buffer, pk: Buffer): boolean;
  crypto_sign_ed25519_pk_to_curve25519(x: Buffer, ed: Buffer): void;
};

const access = { seedUrl: 'https://127.0.0.1:9', seedCa: '' };
const alice = SessionTestClient.fromSeed('39038c8988db02c1af44e8c847bd9713', access);
const bob = SessionTestClient.fromSeed('8c0d6b3ad3d2d5c7c252d3816ba7f267', access);
const bobX = Buffer.from(bob.sessionId.slice(2), 'hex');
const T = 1_764_000_000_123;

const shape = (fields: readonly WireField[]) => fields.map((f) => [f.no, f.wireType]);
const one = (fields: readonly WireField[], no: number): bigint | Buffer => {
  const found = fields.filter((f) => f.no === no);
  expect(found, `field ${no}`).toHaveLength(1);
  return found[0]!.value;
};
const bytes = (fields: readonly WireField[], no: number): Buffer => one(fields, no) as Buffer;

/** Opens a stored message with libsodium: WebSocketMessage.request(2).body(3) → Envelope.content(8) → M ‖ A ‖ signature. */
function unwrap(wire: Buffer) {
  const ws = readFields(wire);
  const request = readFields(bytes(ws, 2));
  const envelope = readFields(bytes(request, 3));
  const ciphertext = bytes(envelope, 8);
  const plain = Buffer.alloc(ciphertext.length - 48);
  expect(sodium.crypto_box_seal_open(plain, ciphertext, bobX, Buffer.from(bob.xSecretKeyHex, 'hex'))).toBe(true);
  const m = plain.subarray(0, plain.length - 96);
  const a = plain.subarray(plain.length - 96, plain.length - 64);
  const signature = plain.subarray(plain.length - 64);
  return { ws, request, envelope, ciphertext, m, a, signature };
}

/** The Content inside a padded M: everything before the 0x80 that only zeros follow. */
function contentIn(m: Buffer): Buffer {
  let end = m.length - 1;
  while (m[end] === 0) end--;
  expect(m[end]).toBe(0x80);
  return m.subarray(0, end);
}

const wire = (options: WireOptions = {}, text = 'hello') => alice.wireMessage(bob.sessionId, text, T, options);

function expectSessionProtocolSignature(m: Buffer, a: Buffer, signature: Buffer) {
  // libsession-util src/session_encrypt.cpp sign_for_recipient: signed M ‖ A ‖ Y, sealed M ‖ A ‖ sig.
  expect(a.equals(alice.edPublicKey)).toBe(true);
  expect(sodium.crypto_sign_verify_detached(signature, Buffer.concat([m, a, bobX]), a)).toBe(true);
  const x = Buffer.alloc(32);
  sodium.crypto_sign_ed25519_pk_to_curve25519(x, a);
  expect(`05${x.toString('hex')}`).toBe(alice.sessionId);
}

describe('session test client: wire formats', () => {
  it("'libsession': libsession-util src/session_protocol.cpp encode_for_destination_internal (SyncOr1o1) and pad_message", () => {
    const { ws, request, envelope, m, a, signature } = unwrap(wire());
    // WebSocketMessage{type REQUEST = 1 (1), request (2)}
    expect(shape(ws)).toEqual([[1, 0], [2, 2]]);
    expect(one(ws, 1)).toBe(1n);
    // req_msg->set_verb(""), set_path(""), set_requestid(0), set_body(envelope): proto2 presence, so all four are written, in field order.
    expect(shape(request)).toEqual([[1, 2], [2, 2], [3, 2], [4, 0]]);
    expect(readFields(wire()).length).toBe(2);
    expect(bytes(ws, 2).subarray(0, 5).toString('hex')).toBe('0a0012001a'); // verb "" (0a 00), path "" (12 00), body tag
    expect(one(request, 4)).toBe(0n);
    // Envelope{type SESSION_MESSAGE 6 (1), timestamp (5), sourceDevice 1 (7), content (8), proSig 64 bytes (11)}; no source (2).
    expect(shape(envelope)).toEqual([[1, 0], [5, 0], [7, 0], [8, 2], [11, 2]]);
    expect([one(envelope, 1), one(envelope, 5), one(envelope, 7)]).toEqual([6n, BigInt(T), 1n]);
    expect(one(envelope, 11)).toHaveLength(64);
    expect(unwrap(wire()).envelope.find((f) => f.no === 11)!.value).not.toEqual(one(envelope, 11)); // a fresh throw-away signature each time
    expectSessionProtocolSignature(m, a, signature);
    // pad_message: Content ‖ 0x80 ‖ zeros, 160·(⌊(L+1)/160⌋ + 1) bytes.
    const content = contentIn(m);
    expect(m.length % 160).toBe(0);
    expect(m.length).toBe(160 * (Math.floor((content.length + 1) / 160) + 1));
    // Content: dataMessage (1){body (1)}, expirationType 0 (12), expirationTimer 0 (13), sigTimestamp (15) = envelope timestamp.
    const fields = readFields(content);
    expect(shape(fields)).toEqual([[1, 2], [12, 0], [13, 0], [15, 0]]);
    expect([one(fields, 12), one(fields, 13), one(fields, 15)]).toEqual([0n, 0n, BigInt(T)]);
    const dataMessage = readFields(bytes(fields, 1));
    expect(shape(dataMessage)).toEqual([[1, 2]]);
    expect(bytes(dataMessage, 1).toString()).toBe('hello');
  });

  it("'libsession' pads a 159-byte Content to 320 bytes (pad_message always leaves a zero after 0x80)", () => {
    expect([0, 1, 158, 159, 160, 318, 319].map((n) => padLibsession(Buffer.alloc(n, 1)).length)).toEqual([160, 160, 160, 320, 320, 320, 480]);
    const padded = padLibsession(Buffer.alloc(158, 1));
    expect([padded[158], padded[159]]).toEqual([0x80, 0]);
  });

  it("'desktop-1.17.2': session-desktop v1.17.2 ts/session/sending/MessageWrapper.ts and ts/session/crypto/BufferPadding.ts", () => {
    const { ws, request, envelope, m, a, signature } = unwrap(wire({ format: 'desktop-1.17.2' }));
    expect(shape(ws)).toEqual([[1, 0], [2, 2]]);
    // wrapEnvelopeInWebSocketMessage: {id: 0, body, verb: 'PUT', path: '/api/v1/message'}, encoded in field order.
    expect(shape(request)).toEqual([[1, 2], [2, 2], [3, 2], [4, 0]]);
    expect([bytes(request, 1).toString(), bytes(request, 2).toString(), one(request, 4)]).toEqual(['PUT', '/api/v1/message', 0n]);
    // wrapContentIntoEnvelope: type, timestamp, content; source only for closed groups.
    expect(shape(envelope)).toEqual([[1, 0], [5, 0], [8, 2]]);
    expect([one(envelope, 1), one(envelope, 5)]).toEqual([6n, BigInt(T)]);
    expectSessionProtocolSignature(m, a, signature);
    // addMessagePadding: 160·⌈(L+2)/160⌉ − 1 bytes.
    const content = contentIn(m);
    expect(m.length).toBe(Math.ceil((content.length + 2) / 160) * 160 - 1);
    expect(m.length % 160).toBe(159);
    // ContentMessage.ts makeContentProto sets sigTimestamp; ExpirableMessage.ts sets expirationType/Timer.
    const fields = readFields(content);
    expect(shape(fields)).toEqual([[1, 2], [12, 0], [13, 0], [15, 0]]);
    expect(one(fields, 15)).toBe(BigInt(T));
  });

  it('Desktop pads to 160n − 1 at the boundaries (BufferPadding.ts getPaddedMessageLength)', () => {
    expect([0, 157, 158, 159, 318, 319].map((n) => padDesktop(Buffer.alloc(n, 1)).length)).toEqual([159, 159, 159, 319, 319, 479]);
  });

  it("'desktop-1.17.2' has the shape of a message a Desktop stored (session-storage-server unit_test/service_node.cpp, MIT)", () => {
    // The message-hashing test vector of the storage server: a real 1:1 message from 2021.
    const real = Buffer.from(
      'CAES1gIKA1BVVBIPL2FwaS92MS9tZXNzYWdlGrsCCAYovfqZv4YvQq8CVwutUBbhRzZw80TvR6uTYMKg9DSagrtpeEpY31L7VxawfS8aSya0SiDa4J025SkjP13YX8g5pxgQ8Z6hgfNArMqr/tSijJ9miVKVDJ63YWE85O8kyWF8tdtZR5j0Vxb+JH5U8Rg1bp7ftKk3OSf7JJMcrUUrDnctQHe540zJ2OTDJ03DfubkX5NmKqEu5nhXGxeeDv3mTiL63fjtCvZYcikfjf6Nh1AX++HTgJ9SGoEIMastGUorFrmmXb2sbjHxNiJn0Radj/VzcA9VxYwBW5+AbGQ2d9+vvm7X+8vh+jIenJfjxf+8CWER+9adNfb4YUH07I+godNCV0O0J05gzqfKdT7J8MBZzFBtKrbk8oCagPpTsq/wZyYFKFKKD+q+zh704dYBILvs5yXUA96pIAA=',
      'base64',
    );
    const ws = readFields(real);
    const request = readFields(bytes(ws, 2));
    const envelope = readFields(bytes(request, 3));
    const ours = unwrap(wire({ format: 'desktop-1.17.2' }));
    expect(shape(ws)).toEqual(shape(ours.ws));
    expect(shape(request)).toEqual(shape(ours.request));
    expect(shape(envelope)).toEqual(shape(ours.envelope));
    expect([bytes(request, 1).toString(), bytes(request, 2).toString(), one(request, 4)]).toEqual(['PUT', '/api/v1/message', 0n]);
    // 48 bytes of sealed box, then M ‖ A (32) ‖ signature (64): M is 159 = 160·1 − 1 bytes.
    expect(bytes(envelope, 8).length - 48 - 96).toBe(159);
  });

  it("'legacy': session-desktop v1.14.5 (before f26133a50 added sigTimestamp): DataMessage.timestamp, no sigTimestamp", () => {
    const { request, envelope, m, a, signature } = unwrap(wire({ format: 'legacy' }));
    expect([bytes(request, 1).toString(), bytes(request, 2).toString()]).toEqual(['PUT', '/api/v1/message']); // MessageSender.ts wrapEnvelope
    expect(shape(envelope)).toEqual([[1, 0], [5, 0], [8, 2]]); // MessageSender.ts buildEnvelope
    expectSessionProtocolSignature(m, a, signature);
    const content = contentIn(m);
    expect(m.length).toBe(Math.ceil((content.length + 2) / 160) * 160 - 1);
    const fields = readFields(content);
    expect(shape(fields)).toEqual([[1, 2]]); // no expiration fields when off, no sigTimestamp (15)
    const dataMessage = readFields(bytes(fields, 1));
    expect(shape(dataMessage)).toEqual([[1, 2], [7, 0]]);
    expect(one(dataMessage, 7)).toBe(BigInt(T)); // VisibleMessage.ts: dataMessage.timestamp
    expect(bob.open(wire({ format: 'legacy' }))).toMatchObject({ text: 'hello', verb: 'PUT', path: '/api/v1/message' });
  });

  it("'legacy' with sigTimestamp 0 writes field 15 as 0, which ts/receiver/common.ts treats as a legacy client", () => {
    const fields = readFields(contentIn(unwrap(wire({ format: 'legacy', sigTimestamp: 0 })).m));
    expect(shape(fields)).toEqual([[1, 2], [15, 0]]);
    expect(one(fields, 15)).toBe(0n);
    expect(bob.open(wire({ format: 'legacy', sigTimestamp: 0 }))).toMatchObject({ text: 'hello', sigTimestamp: 0 });
  });

  it("'unpadded': the libsession wrapper around a Content with no padding (libsession unpad_message lets it through)", () => {
    const { request, envelope, m, a, signature } = unwrap(wire({ format: 'unpadded' }));
    expect([bytes(request, 1).length, bytes(request, 2).length]).toEqual([0, 0]);
    expect(shape(envelope)).toEqual([[1, 0], [5, 0], [7, 0], [8, 2], [11, 2]]);
    expectSessionProtocolSignature(m, a, signature);
    const fields = readFields(m); // M is exactly the Content
    expect(shape(fields)).toEqual([[1, 2], [12, 0], [13, 0], [15, 0]]);
    expect(m[m.length - 1]).not.toBe(0x80);
    expect(bob.open(wire({ format: 'unpadded' }))).toMatchObject({ text: 'hello', paddedLength: m.length, contentLength: m.length });
  });
});


/** The Content's fields of a libsession-format message carrying `content`. */
const contentOf = (content: ContentSpec, extra: WireOptions = {}) => readFields(contentIn(unwrap(wire({ content, ...extra })).m));
const sub = (fields: readonly WireField[], ...path: number[]) => path.reduce((f, no) => readFields(bytes(f, no)), fields);

describe('session test client: content kinds (protos/SignalService.proto of session-desktop v1.17.17)', () => {
  it('typing indicator: Content.typingMessage (6){timestamp (1), action (2)}, no expiration fields', () => {
    const fields = contentOf({ kind: 'typing' });
    expect(shape(fields)).toEqual([[6, 2], [15, 0]]);
    expect(sub(fields, 6).map((f) => f.value)).toEqual([BigInt(T), 0n]); // STARTED 0
    expect(one(sub(contentOf({ kind: 'typing', action: 'stopped' }), 6), 2)).toBe(1n); // STOPPED 1
  });

  it('read receipt: Content.receiptMessage (5){type READ 1 (1), timestamp (2) repeated, unpacked (proto2)}', () => {
    const fields = contentOf({ kind: 'readReceipt', timestamps: [T - 5, T - 4] });
    expect(shape(fields)).toEqual([[5, 2], [15, 0]]);
    expect(shape(sub(fields, 5))).toEqual([[1, 0], [2, 0], [2, 0]]);
    expect(sub(fields, 5).map((f) => f.value)).toEqual([1n, BigInt(T - 5), BigInt(T - 4)]);
  });

  it('reaction: DataMessage.reaction (11){id (1), author (2), emoji (3), action (4)}', () => {
    const fields = contentOf({ kind: 'reaction', messageTimestamp: T - 9, author: bob.sessionId, emoji: '❤️' });
    expect(shape(fields)).toEqual([[1, 2], [12, 0], [13, 0], [15, 0]]);
    expect(shape(sub(fields, 1))).toEqual([[11, 2]]);
    const reaction = sub(fields, 1, 11);
    expect(shape(reaction)).toEqual([[1, 0], [2, 2], [3, 2], [4, 0]]);
    expect([one(reaction, 1), bytes(reaction, 2).toString(), bytes(reaction, 3).toString(), one(reaction, 4)]).toEqual([BigInt(T - 9), bob.sessionId, '❤️', 0n]);
  });

  it('voice note: DataMessage.attachments (2) with no body; AttachmentPointer{deprecated_id fixed64 (1), flags VOICE_MESSAGE 1 (8), url (101)}', () => {
    const fields = contentOf({ kind: 'attachment', voiceNote: true });
    expect(shape(sub(fields, 1))).toEqual([[2, 2]]);
    const pointer = sub(fields, 1, 2);
    expect(shape(pointer)).toEqual([[1, 1], [2, 2], [3, 2], [4, 0], [6, 2], [8, 0], [101, 2]]);
    expect(one(pointer, 8)).toBe(1n);
    expect([bytes(pointer, 3).length, bytes(pointer, 6).length]).toEqual([64, 32]);
    expect(bytes(pointer, 101).toString()).toBe(`http://filev2.getsession.org/file/${bytes(pointer, 1).readBigUInt64LE()}`);
    expect(bob.open(wire({ content: { kind: 'attachment', voiceNote: true } }))).toMatchObject({ kind: 'attachment', text: '' });
  });

  it('call: Content.callMessage (3){type (1), sdps (2) unless PRE_OFFER/END_CALL, uuid (5)}', () => {
    const preOffer = contentOf({ kind: 'call', uuid: 'u-1' });
    expect(shape(preOffer)).toEqual([[3, 2], [12, 0], [13, 0], [15, 0]]);
    expect(sub(preOffer, 3).map((f) => (typeof f.value === 'bigint' ? f.value : f.value.toString()))).toEqual([6n, 'u-1']);
    expect(shape(sub(contentOf({ kind: 'call', type: 'offer' }), 3))).toEqual([[1, 0], [2, 2], [5, 2]]);
  });

  it('group invite: DataMessage.groupUpdateMessage (120).inviteMessage (1){groupSessionId, name, memberAuthData 100, adminSignature 64}', () => {
    const invite = sub(contentOf({ kind: 'groupInvite', name: 'Friends' }), 1, 120, 1);
    expect(shape(invite)).toEqual([[1, 2], [2, 2], [3, 2], [4, 2]]);
    expect(bytes(invite, 1).toString()).toMatch(/^03[0-9a-f]{64}$/);
    expect([bytes(invite, 2).toString(), bytes(invite, 3).length, bytes(invite, 4).length]).toEqual(['Friends', 100, 64]);
  });

  it('DataExtractionNotification (8){type MEDIA_SAVED 2 (1), timestamp (2)}, UnsendRequest (9){timestamp, author}', () => {
    const extraction = contentOf({ kind: 'dataExtraction', timestamp: T - 1 });
    expect(shape(extraction)).toEqual([[8, 2], [12, 0], [13, 0], [15, 0]]);
    expect(sub(extraction, 8).map((f) => f.value)).toEqual([2n, BigInt(T - 1)]);
    const unsend = contentOf({ kind: 'unsend', messageTimestamp: T - 2, author: alice.sessionId });
    expect(shape(unsend)).toEqual([[9, 2], [15, 0]]);
    expect(sub(unsend, 9).map((f) => (typeof f.value === 'bigint' ? f.value : f.value.toString()))).toEqual([BigInt(T - 2), alice.sessionId]);
  });

  it('MessageRequestResponse (10){isApproved true (1), profile (3){displayName (1), lastProfileUpdateSeconds (3)}}', () => {
    const fields = contentOf({ kind: 'messageRequestResponse' }, { displayName: 'Alice' });
    expect(shape(fields)).toEqual([[10, 2], [15, 0]]);
    expect(shape(sub(fields, 10))).toEqual([[1, 0], [3, 2]]);
    expect(one(sub(fields, 10), 1)).toBe(1n);
    expect(one(sub(fields, 10, 3), 1).toString()).toBe('Alice');
  });

  it('text with disappearing messages and a profile: expirationType (12), expirationTimer (13), DataMessage.profile (101)', () => {
    const options: WireOptions = { displayName: 'Alice', disappearing: { type: 'deleteAfterSend', timerSeconds: 3600 } };
    const fields = contentOf({ kind: 'text' }, options);
    expect([one(fields, 12), one(fields, 13)]).toEqual([2n, 3600n]); // DELETE_AFTER_SEND 2
    expect(shape(sub(fields, 1))).toEqual([[1, 2], [101, 2]]);
    expect(one(sub(fields, 1, 101), 1).toString()).toBe('Alice');
    expect(bob.open(wire(options))).toMatchObject({ kind: 'text', displayName: 'Alice', expirationType: 2, expirationTimer: 3600 });
  });

  it('refuses to write a message without its proto2 required fields', () => {
    expect(() => encode('TypingMessage', { timestamp: T })).toThrow('TypingMessage.action is required');
  });
});

/** A message to bob with a hand-made Content and Envelope (for what the client itself never writes). */
function forged(envelope: (ciphertext: Buffer) => Buffer, content = encode('Content', { dataMessage: { body: 'x' } })): Buffer {
  const ciphertext = encryptForRecipient(identityFromSeed(alice.seedHex), bobX, padLibsession(content));
  return encode('WebSocketMessage', { type: 1, request: { body: envelope(ciphertext) } });
}
const envelopeOf = (ciphertext: Buffer) => encode('Envelope', { type: 6, timestamp: T, content: ciphertext });

describe('session test client: reading the way libsession decode_envelope and Desktop ts/receiver/common.ts do', () => {
  it('reports what the sender wrote: verb, path, sourceDevice, proSig, padding', () => {
    expect(bob.open(wire())).toMatchObject({ sender: alice.sessionId, text: 'hello', envelopeTimestamp: T, sigTimestamp: T, verb: '', path: '', sourceDevice: 1, proSigLength: 64, paddedLength: 160, expirationType: 0, expirationTimer: 0 });
    const desktop = bob.open(wire({ format: 'desktop-1.17.2' }));
    expect(desktop).toMatchObject({ verb: 'PUT', path: '/api/v1/message', paddedLength: 159 });
    expect(desktop).not.toHaveProperty('sourceDevice');
    expect(desktop).not.toHaveProperty('proSigLength');
    expect(bob.open(wire({ emptySource: true }))).toMatchObject({ envelopeSource: '' });
  });

  it('reads only request.body: any verb and path, or none', () => {
    const body = bytes(readFields(bytes(readFields(wire()), 2)), 3);
    for (const request of [{ verb: 'POST', path: '/anything', body, requestId: 7 }, { body }]) {
      expect(bob.open(encode('WebSocketMessage', { type: 1, request }))).toMatchObject({ text: 'hello' });
    }
    expect(bob.open(encode('WebSocketMessage', { request: { body } }))).toMatchObject({ text: 'hello' }); // type is not checked either
  });

  it('applies the sigTimestamp rule: missing or 0 is a legacy client, anything else must equal the envelope timestamp', () => {
    expect(bob.open(wire({ sigTimestamp: null }))).toMatchObject({ text: 'hello' });
    expect(bob.open(wire({ sigTimestamp: 0 }))).toMatchObject({ text: 'hello', sigTimestamp: 0 });
    expect(bob.open(wire({ sigTimestamp: T - 1 }))).toBe('sigTimestamp differs from the envelope timestamp');
    expect(bob.open(alice.wireMessage(bob.sessionId, 'old signature', T, T + 1))).toBe('sigTimestamp differs from the envelope timestamp');
  });

  it('refuses what libsession refuses', () => {
    const body = bytes(readFields(bytes(readFields(wire()), 2)), 3);
    expect(bob.open(encode('WebSocketMessage', { type: 1 }))).toBe('websocket message has no request');
    expect(bob.open(encode('WebSocketMessage', { type: 1, request: { verb: '', path: '' } }))).toBe('websocket request has no body');
    expect(bob.open(encode('WebSocketMessage', { request: { body: body.subarray(0, 10) } }))).toMatch(/^envelope does not parse/);
    expect(bob.open(forged((c) => Buffer.concat([varintField(1, 6), lengthDelimited(8, c)])))).toBe('envelope does not parse: Envelope.timestamp is required (proto2) and missing');
    expect(bob.open(forged(() => encode('Envelope', { type: 6, timestamp: T })))).toBe('envelope has no content');
    expect(bob.open(forged((c) => encode('Envelope', { type: 6, timestamp: T, content: c, proSig: Buffer.alloc(63) })))).toBe('envelope proSig has wrong size (63)');
    expect(bob.open(forged((c) => encode('Envelope', { type: 6, source: 'abc', timestamp: T, content: c })))).toBe('envelope source has unexpected size (3)');
    const noAction = Buffer.concat([lengthDelimited(6, varintField(1, T)), varintField(15, T)]);
    expect(bob.open(forged(envelopeOf, noAction))).toBe('content does not parse: TypingMessage.action is required (proto2) and missing');
    const charlie = SessionTestClient.fromSeed('00112233445566778899aabbccddeeff', access);
    expect(charlie.open(wire())).toBe('does not open');
    // M ‖ A ‖ signature where the signature is over M ‖ A ‖ a different recipient.
    const a = identityFromSeed(alice.seedHex);
    const m = padLibsession(encode('Content', { dataMessage: { body: 'x' } }));
    const badSignature = edSign(Buffer.concat([m, a.edPublic, Buffer.alloc(32)]), a.edPrivate);
    expect(bob.open(forged(() => envelopeOf(sealTo(bobX, Buffer.concat([m, a.edPublic, badSignature])))))).toBe('bad signature');
  });

  it('keeps a repeated (sender, sent time) as a duplicate, as Desktop ts/receiver/dataMessage.ts drops it', () => {
    const receiver = SessionTestClient.fromSeed(bob.seedHex, access);
    expect(receiver.ingest('h1', wire())).toMatchObject({ hash: 'h1', text: 'hello' });
    expect(receiver.ingest('h1', wire())).toBeUndefined(); // the same stored message again
    expect(receiver.ingest('h2', wire({}, 'same time, other text'))).toBeUndefined();
    expect(receiver.duplicates).toMatchObject([{ hash: 'h2', text: 'same time, other text' }]);
    expect(receiver.ingest('h3', wire({ content: { kind: 'typing' } }))).toMatchObject({ kind: 'typing' }); // not a stored message
    expect(receiver.ingest('h4', alice.wireMessage(bob.sessionId, 'later', T + 1))).toMatchObject({ text: 'later' });
    expect(receiver.ingest('h5', Buffer.from('junk'))).toBeUndefined();
    expect(receiver.rejected).toHaveLength(1);
  });
});

const formats: SessionFormat[] = ['libsession', 'desktop-1.17.2', 'legacy', 'unpadded'];
it('names the source of every format', () => {
  for (const format of formats) expect(FORMATS[format].source.length).toBeGreaterThan(40);
  expect(unpadLenient(Buffer.from([1, 2, 0x80, 0, 0]))).toEqual(Buffer.from([1, 2]));
  expect(unpadLenient(Buffer.from([1, 2, 3]))).toEqual(Buffer.from([1, 2, 3]));
  expect(wrap(FORMATS.legacy, T, Buffer.alloc(200)).includes(Buffer.from('/api/v1/message'))).toBe(true);
});
