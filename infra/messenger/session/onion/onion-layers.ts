import { createCipheriv, createDecipheriv, createHmac, createPrivateKey, createPublicKey, diffieHellman, generateKeyPairSync, randomBytes, type KeyObject } from 'node:crypto';

/**
 * The bytes of a Session onion request and of its answer, written from the protocol as the storage
 * server reads and writes it (session-storage-server, MIT):
 *
 * - every layer is `u32le(N) ‖ N bytes ‖ UTF-8 JSON` (oxenss/rpc/onion_processing.cpp,
 *   `parse_combined_payload`: the length is little-endian, the JSON is the whole rest);
 * - a layer's N bytes are sealed for one node: an ephemeral X25519 key pair per layer, the key
 *   HMAC-SHA256 with key "LOKI" over X25519(ephemeral secret, node's X25519 key), AES-256-GCM with a
 *   random 12-byte IV, written IV ‖ ciphertext ‖ 16-byte tag (oxenss/crypto/channel_encryption.cpp,
 *   `derive_symmetric_key`, `encrypt_openssl`/`decrypt_openssl` with EVP_aes_256_gcm);
 * - the node that finds "headers" in its JSON is the destination, and its N bytes are the storage
 *   RPC body `{"method","params"}` as /storage_rpc/v1 takes it (onion_processing.cpp
 *   `process_inner_request`, request_handler.cpp `process_onion_req(FinalDestinationInfo&&)`);
 *   `"json": true` asks it to embed a JSON answer as JSON rather than as a string of JSON
 *   (onion_processing.h `FinalDestinationInfo::json`);
 * - every other node finds `{"destination": next node's Ed25519 hex, "ephemeral_key": hex of the
 *   X25519 key the next layer was sealed with, "enc_type"}` and passes the N bytes on (the
 *   `RelayToNodeInfo` branch); the guard gets the outermost layer with `{"ephemeral_key","enc_type"}`
 *   (oxenss/server/https.cpp, `process_onion_req_v2`);
 * - the destination answers, and every node on the way passes back untouched, base64 of
 *   AES-256-GCM(`{"body":…,"status":…}`) under the destination layer's key (request_handler.cpp
 *   `wrap_proxy_response`).
 *
 * The same wire format is what Session's clients build (session-desktop
 * ts/session/apis/snode_api/onions.ts `buildOnionCtxs`/`encodeCiphertextPlusJson`,
 * ts/webworker/workers/node/util/util.worker.ts `encryptForPubkey`/`deriveSymmetricKey`;
 * libsession-util src/onionreq/builder.cpp `Builder::build`, hop_encryption.cpp,
 * response_parser.cpp); none of their (GPL) code is used here.
 */
export const ENC_TYPE = 'aes-gcm';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_SALT = 'LOKI';
/** PKCS#8 DER prefix of a raw X25519 private key (RFC 8410). */
const X25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b656e04220420', 'hex');

export interface X25519KeyPair {
  readonly publicKey: Buffer;
  readonly privateKey: KeyObject;
}

/** A node as an onion layer needs it: its identity (where to relay) and its X25519 key (whom to seal for). */
export interface OnionHop {
  readonly ed25519: string;
  readonly x25519: string;
}

export interface BuiltOnion {
  /** The bytes to POST to the guard's /onion_req/v2. */
  readonly payload: Buffer;
  /** The destination layer's key: the answer opens with it. */
  readonly answerKey: Buffer;
  /** Every layer's key, guard first then destination (to tell which node sealed an error). */
  readonly layerKeys: readonly Buffer[];
}

/** The destination's answer, opened. */
export interface OnionAnswer {
  readonly status: number;
  readonly body: unknown;
}

/** The guard's answer did not open as the destination's answer: the path, not the destination, answered. */
export class OnionAnswerError extends Error {
  override readonly name = 'OnionAnswerError';
}

export function ephemeralKeyPair(): X25519KeyPair {
  const { privateKey, publicKey } = generateKeyPairSync('x25519');
  return { privateKey, publicKey: rawPublicKey(publicKey) };
}

/** The key pair of a raw 32-byte X25519 secret (for test vectors). */
export function x25519KeyPair(secret: Uint8Array): X25519KeyPair {
  if (secret.byteLength !== 32) throw new Error('an X25519 secret key is 32 bytes');
  const privateKey = createPrivateKey({ key: Buffer.concat([X25519_PKCS8_PREFIX, secret]), format: 'der', type: 'pkcs8' });
  return { privateKey, publicKey: rawPublicKey(createPublicKey(privateKey)) };
}

/** HMAC-SHA256(key "LOKI", X25519(our secret, their public key)): the AES-256-GCM key of one layer. */
export function layerKey(ourSecret: KeyObject, theirPublic: Uint8Array): Buffer {
  if (theirPublic.byteLength !== 32) throw new Error('an X25519 public key is 32 bytes');
  const publicKey = createPublicKey({ key: { kty: 'OKP', crv: 'X25519', x: Buffer.from(theirPublic).toString('base64url') }, format: 'jwk' });
  const shared = diffieHellman({ privateKey: ourSecret, publicKey });
  return createHmac('sha256', KEY_SALT).update(shared).digest();
}

/** Whether a layer can be sealed for this X25519 key (not a low-order point, which X25519 refuses). */
export function canSealFor(x25519Hex: string): boolean {
  try {
    layerKey(ephemeralKeyPair().privateKey, hexKey(x25519Hex, 'x25519'));
    return true;
  } catch {
    return false;
  }
}

/** AES-256-GCM with a random 12-byte IV: IV ‖ ciphertext ‖ 16-byte tag. */
export function sealAesGcm(key: Uint8Array, plaintext: Uint8Array): Buffer {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv, { authTagLength: TAG_BYTES });
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]);
}

/** Opens IV ‖ ciphertext ‖ tag; throws when it is too short or the tag does not verify. */
export function openAesGcm(key: Uint8Array, sealed: Uint8Array): Buffer {
  if (sealed.byteLength < IV_BYTES + TAG_BYTES) throw new Error('the sealed value is too short');
  const data = Buffer.from(sealed.buffer, sealed.byteOffset, sealed.byteLength);
  const decipher = createDecipheriv('aes-256-gcm', key, data.subarray(0, IV_BYTES), { authTagLength: TAG_BYTES });
  decipher.setAuthTag(data.subarray(data.byteLength - TAG_BYTES));
  return Buffer.concat([decipher.update(data.subarray(IV_BYTES, data.byteLength - TAG_BYTES)), decipher.final()]);
}

/** `u32le(N) ‖ N bytes ‖ JSON`: the payload of every layer. */
export function combinedPayload(bytes: Uint8Array, json: object): Buffer {
  if (bytes.byteLength > 0xffff_ffff) throw new Error('an onion layer holds at most 2^32 - 1 bytes');
  const length = Buffer.alloc(4);
  length.writeUInt32LE(bytes.byteLength);
  return Buffer.concat([length, bytes, Buffer.from(JSON.stringify(json), 'utf8')]);
}

/** Seals `payload` for a node under a fresh ephemeral key pair. */
function sealFor(node: OnionHop, payload: Uint8Array): { sealed: Buffer; ephemeral: Buffer; key: Buffer } {
  const ephemeral = ephemeralKeyPair();
  const key = layerKey(ephemeral.privateKey, hexKey(node.x25519, 'x25519'));
  return { sealed: sealAesGcm(key, payload), ephemeral: ephemeral.publicKey, key };
}

/**
 * The onion for a storage RPC `body` (`{"method","params"}` JSON) to `destination` through `path`
 * (guard first). The destination must not be one of the path's nodes; no node may be there twice.
 */
export function buildOnion(path: readonly OnionHop[], destination: OnionHop, body: Uint8Array): BuiltOnion {
  if (path.length === 0) throw new Error('an onion path has at least one node');
  const seen = new Set<string>([destination.ed25519]);
  for (const hop of path) {
    if (seen.has(hop.ed25519)) throw new Error('a node may appear only once in an onion path, destination included');
    seen.add(hop.ed25519);
  }
  // The destination's layer: the RPC body, and "headers" to say "this is for you".
  let layer = sealFor(destination, combinedPayload(body, { headers: '', json: true }));
  const answerKey = layer.key;
  const keys = [layer.key];
  // Then each node from the last to the guard, each told where to pass the inner layer on.
  let next = destination;
  for (let i = path.length - 1; i >= 0; i--) {
    const hop = path[i]!;
    const routing = { destination: next.ed25519, ephemeral_key: layer.ephemeral.toString('hex'), enc_type: ENC_TYPE };
    layer = sealFor(hop, combinedPayload(layer.sealed, routing));
    keys.unshift(layer.key);
    next = hop;
  }
  const payload = combinedPayload(layer.sealed, { ephemeral_key: layer.ephemeral.toString('hex'), enc_type: ENC_TYPE });
  return { payload, answerKey, layerKeys: keys };
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * Opens the answer a guard returned with status 200: base64 of the sealed `{"body","status"}`.
 * Throws OnionAnswerError when it is not that (a node on the path answered instead).
 */
export function openOnionAnswer(text: Buffer, answerKey: Uint8Array): OnionAnswer {
  const encoded = text.toString('latin1').trim();
  if (encoded.length === 0 || !BASE64.test(encoded)) throw new OnionAnswerError('the answer is not base64');
  let plaintext: string;
  try {
    plaintext = openAesGcm(answerKey, Buffer.from(encoded, 'base64')).toString('utf8');
  } catch {
    throw new OnionAnswerError('the answer does not open with the destination key');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(plaintext);
  } catch {
    throw new OnionAnswerError('the opened answer is not JSON');
  }
  const status = (parsed as { status?: unknown } | null)?.status;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 100 || status > 999) throw new OnionAnswerError('the opened answer has no status');
  return { status, body: bodyOf((parsed as { body?: unknown }).body) };
}

/**
 * With `"json": true` a JSON answer comes embedded and a text answer as a string; a string that is
 * itself a JSON object or array (a node answering without honouring "json") is read as JSON too.
 */
function bodyOf(body: unknown): unknown {
  if (typeof body !== 'string') return body ?? '';
  const start = body.trimStart()[0];
  if (start !== '{' && start !== '[') return body;
  try {
    return JSON.parse(body) as unknown;
  } catch {
    return body;
  }
}

function rawPublicKey(key: KeyObject): Buffer {
  const jwk = key.export({ format: 'jwk' });
  if (typeof jwk.x !== 'string') throw new Error('not an X25519 key');
  return Buffer.from(jwk.x, 'base64url');
}

function hexKey(hex: string, what: string): Buffer {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error(`a node's ${what} key is 64 hex digits`);
  return Buffer.from(hex, 'hex');
}
