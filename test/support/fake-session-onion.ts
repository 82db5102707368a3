import { createCipheriv, createDecipheriv, createHmac } from 'node:crypto';
import sodiumNative from 'sodium-native';

/**
 * The onion-request processing of Session's storage server, for the fake swarm: written from
 * session-storage-server (MIT) and from nothing of Relay's client, so that a client bug cannot hide
 * behind a fake sharing it.
 *
 * - `POST /onion_req/v2` (oxenss/server/https.cpp `process_onion_req_v2`): the body is
 *   `u32le(N) ‖ N bytes ‖ JSON` (rpc/onion_processing.cpp `parse_combined_payload`); the JSON needs
 *   "ephemeral_key" (64 hex), may have "enc_type" and "hop_no"; anything wrong is
 *   400 `Error parsing onion request: <what>`.
 * - Each node (rpc/request_handler.cpp `process_onion_req`) opens its N bytes with its X25519 key and
 *   the ephemeral key (crypto/channel_encryption.cpp: aes-gcm, xchacha20 or aes-cbc); not opening
 *   is 400 `Invalid ciphertext`. The plaintext is again `u32le(N) ‖ N bytes ‖ JSON`
 *   (`process_inner_request`): "headers" makes this node the destination, which runs the N bytes as
 *   a /storage_rpc/v1 body and answers 200 with base64 (unless "base64": false) of the sealed
 *   `{"body","status"}` ("json": true embeds a JSON body, else it is a string of JSON;
 *   `wrap_proxy_response`); "host" asks for a proxied HTTP request; otherwise "destination" and
 *   "ephemeral_key" (and "enc_type") send the N bytes on to that node. A JSON that does not parse,
 *   or misses a field, is a sealed 400 `Invalid json`; an unknown next node is
 *   502 `Next node not found: <ed25519 hex>`; a next node that does not answer is 504 `Request time out`.
 * - Between nodes the real server sends an OxenMQ request `sn.onion_request` whose one part is the
 *   bencoded dict {data, enc_type, ephemeral_key (32 bytes), hop_no} (server/omq.cpp
 *   `encode_onion_data`/`decode_onion_data`, snode/service_node.cpp `send_onion_to_sn`, which adds
 *   one to hop_no), answered with two parts [status, body]; past hop 15 it answers 400
 *   `onion request max path length exceeded`. The fake carries that same dict over HTTPS to the
 *   next fake node's RELAY_PATH and answers with the status and body.
 */
const sodium = sodiumNative as unknown as {
  crypto_scalarmult(q: Buffer, n: Buffer, p: Buffer): void;
  crypto_generichash(out: Buffer, input: Buffer): void;
  crypto_aead_xchacha20poly1305_ietf_encrypt(c: Buffer, m: Buffer, ad: null, nsec: null, npub: Buffer, k: Buffer): number;
  crypto_aead_xchacha20poly1305_ietf_decrypt(m: Buffer, nsec: null, c: Buffer, ad: null, npub: Buffer, k: Buffer): number;
  randombytes_buf(buf: Buffer): void;
};

export const RELAY_PATH = '/fake-omq/sn.onion_request';
export const MAX_ONION_HOPS = 15;

export type EncType = 'aes-gcm' | 'xchacha20' | 'aes-cbc';
export interface OnionReply {
  readonly status: number;
  readonly body: Buffer;
}
export interface NodeKeys {
  readonly xSecret: Buffer;
  readonly xPublic: Buffer;
}

/** What a fake node needs of the swarm to serve onion requests. */
export interface OnionHost {
  readonly keys: NodeKeys;
  /** Whether the network knows a node with this Ed25519 key (`find_node`). */
  knows(ed25519: Buffer): boolean;
  /** The storage RPC of this node on a /storage_rpc/v1 body, recorded as arrived through an onion. */
  runRpc(body: string): { status: number; body: unknown };
  /** Sends the bencoded hop to a node; undefined when it did not answer (OxenMQ's failure). */
  relay(ed25519: Buffer, bencoded: Buffer): Promise<OnionReply | undefined>;
  /** Notes this node's part in an onion request (for tests). */
  note(hopNo: number, role: 'relay' | 'destination'): void;
}

class JsonError extends Error {}

const text = (status: number, body: string): OnionReply => ({ status, body: Buffer.from(body, 'utf8') });

/** `parse_combined_payload`: u32le N, N bytes, the rest parsed as JSON (throws like the server). */
export function parseCombinedPayload(payload: Buffer): { ciphertext: Buffer; json: unknown } {
  if (payload.byteLength < 4) throw new JsonError('Unexpected payload size; expected ciphertext size');
  const n = payload.readUInt32LE(0);
  const rest = payload.subarray(4);
  if (rest.byteLength < n) throw new JsonError(`Unexpected payload size ${rest.byteLength}, expected >= ${n}`);
  const source = rest.subarray(n).toString('utf8');
  try {
    return { ciphertext: rest.subarray(0, n), json: JSON.parse(source) as unknown };
  } catch (error) {
    throw new JsonError(`[json.exception.parse_error.101] parse error: ${(error as Error).message}`);
  }
}

/** channel_encryption.cpp `parse_enc_type`. */
export function parseEncType(name: string): EncType {
  if (name === 'xchacha20' || name === 'xchacha20-poly1305') return 'xchacha20';
  if (name === 'aes-gcm' || name === 'gcm') return 'aes-gcm';
  if (name === 'aes-cbc' || name === 'cbc') return 'aes-cbc';
  throw new JsonError(`Invalid encryption type ${name}`);
}

/** x25519_pubkey::from_hex / ed25519_pubkey::from_hex (crypto/keys.cpp `load_from_hex`). */
export function keyFromHex(hex: string): Buffer {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new JsonError('Hex key data is invalid: data is not hex');
  if (hex.length !== 64) throw new JsonError(`Hex key data is invalid: expected 32 hex digits, received ${hex.length}`);
  return Buffer.from(hex, 'hex');
}

function scalarmult(secret: Buffer, pub: Buffer): Buffer {
  const shared = Buffer.alloc(32);
  // crypto_scalarmult fails (throws here) for a low-order public key, as the server's does.
  sodium.crypto_scalarmult(shared, secret, pub);
  return shared;
}

/** `derive_symmetric_key`: HMAC-SHA256 keyed with "LOKI" over the X25519 shared secret. */
function gcmKey(keys: NodeKeys, clientPub: Buffer): Buffer {
  return createHmac('sha256', 'LOKI').update(scalarmult(keys.xSecret, clientPub)).digest();
}

/** `xchacha20_shared_key` as the server (server_ = true): BLAKE2b-32(aB ‖ A(client) ‖ B(server)). */
function xchachaKey(keys: NodeKeys, clientPub: Buffer): Buffer {
  const key = Buffer.alloc(32);
  sodium.crypto_generichash(key, Buffer.concat([scalarmult(keys.xSecret, clientPub), clientPub, keys.xPublic]));
  return key;
}

/** ChannelEncryption::decrypt on the server's side; throws when it does not open. */
export function channelDecrypt(type: EncType, data: Buffer, keys: NodeKeys, clientPub: Buffer): Buffer {
  if (type === 'xchacha20') {
    const nonce = data.subarray(0, 24);
    const ct = data.subarray(24);
    if (nonce.byteLength < 24 || ct.byteLength < 16) throw new Error('Invalid ciphertext: too short');
    const out = Buffer.alloc(ct.byteLength - 16);
    sodium.crypto_aead_xchacha20poly1305_ietf_decrypt(out, null, ct, null, nonce, xchachaKey(keys, clientPub));
    return out;
  }
  const gcm = type === 'aes-gcm';
  const ivLength = gcm ? 12 : 16;
  const tagLength = gcm ? 16 : 0;
  const iv = data.subarray(0, ivLength);
  const rest = data.subarray(iv.byteLength);
  if (iv.byteLength < ivLength || rest.byteLength < tagLength) throw new Error('Encrypted value is too short');
  const key = gcm ? gcmKey(keys, clientPub) : scalarmult(keys.xSecret, clientPub);
  const decipher = gcm ? createDecipheriv('aes-256-gcm', key, iv, { authTagLength: 16 }) : createDecipheriv('aes-256-cbc', key, iv);
  if (gcm) (decipher as ReturnType<typeof createDecipheriv> & { setAuthTag(tag: Buffer): void }).setAuthTag(rest.subarray(rest.byteLength - 16));
  return Buffer.concat([decipher.update(rest.subarray(0, rest.byteLength - tagLength)), decipher.final()]);
}

/** ChannelEncryption::encrypt on the server's side (random IV or nonce first, then the tag, if any). */
export function channelEncrypt(type: EncType, plaintext: Buffer, keys: NodeKeys, clientPub: Buffer): Buffer {
  if (type === 'xchacha20') {
    const nonce = Buffer.alloc(24);
    sodium.randombytes_buf(nonce);
    const out = Buffer.alloc(plaintext.byteLength + 16);
    sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(out, plaintext, null, null, nonce, xchachaKey(keys, clientPub));
    return Buffer.concat([nonce, out]);
  }
  const gcm = type === 'aes-gcm';
  const iv = Buffer.alloc(gcm ? 12 : 16);
  sodium.randombytes_buf(iv);
  const cipher = gcm ? createCipheriv('aes-256-gcm', gcmKey(keys, clientPub), iv, { authTagLength: 16 }) : createCipheriv('aes-256-cbc', scalarmult(keys.xSecret, clientPub), iv);
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, body, gcm ? (cipher as ReturnType<typeof createCipheriv> & { getAuthTag(): Buffer }).getAuthTag() : Buffer.alloc(0)]);
}

export type InnerRequest =
  | { readonly kind: 'final'; readonly body: Buffer; readonly json: boolean; readonly base64: boolean }
  | { readonly kind: 'server'; readonly host: string; readonly target: string; readonly port: number; readonly protocol: string }
  | { readonly kind: 'node'; readonly ciphertext: Buffer; readonly ephemeralKey: Buffer; readonly encType: EncType; readonly next: Buffer }
  | { readonly kind: 'invalid-json'; readonly why: string };

/** `process_inner_request`: what a node's opened layer asks of it. */
export function processInnerRequest(plaintext: Buffer): InnerRequest {
  try {
    const { ciphertext, json } = parseCombinedPayload(plaintext);
    const object = isObject(json) ? json : {};
    if ('headers' in object) {
      return { kind: 'final', body: ciphertext, json: optionalBool(object, 'json') ?? false, base64: optionalBool(object, 'base64') ?? true };
    }
    if ('host' in object) {
      const port = object['port'] === undefined ? 443 : object['port'];
      if (typeof port !== 'number') throw new JsonError('[json.exception.type_error.302] type must be number');
      const protocol = object['protocol'] === undefined ? 'https' : stringAt(object, 'protocol');
      return { kind: 'server', host: stringAt(object, 'host'), target: stringAt(object, 'target'), port, protocol };
    }
    const next = keyFromHex(stringAt(object, 'destination'));
    const ephemeralKey = keyFromHex(stringAt(object, 'ephemeral_key'));
    const encType = object['enc_type'] === undefined ? 'aes-gcm' : parseEncType(stringAt(object, 'enc_type'));
    return { kind: 'node', ciphertext, ephemeralKey, encType, next };
  } catch (error) {
    return { kind: 'invalid-json', why: (error as Error).message };
  }
}

/** `process_onion_req_v2` at the guard: the outer JSON, then the node's own processing from hop 0. */
export async function processOnionV2(host: OnionHost, body: Buffer): Promise<OnionReply> {
  let meta: { ciphertext: Buffer; ephemeralKey: Buffer; encType: EncType; hopNo: number };
  try {
    const { ciphertext, json } = parseCombinedPayload(body);
    if (!isObject(json)) throw new JsonError(`[json.exception.type_error.304] cannot use at() with ${typeName(json)}`);
    const ephemeralKey = keyFromHex(stringAt(json, 'ephemeral_key'));
    const encType = json['enc_type'] === undefined ? 'aes-gcm' : parseEncType(stringAt(json, 'enc_type'));
    // `get<int>()` takes any number (truncated) or a boolean, and throws on anything else.
    const hop = json['hop_no'];
    if (hop !== undefined && typeof hop !== 'number' && typeof hop !== 'boolean') throw new JsonError(`[json.exception.type_error.302] type must be number, but is ${typeName(hop)}`);
    meta = { ciphertext, ephemeralKey, encType, hopNo: Math.max(0, Math.trunc(Number(hop ?? 0))) };
  } catch (error) {
    return text(400, `Error parsing onion request: ${(error as Error).message}`);
  }
  return processOnion(host, meta.ciphertext, meta.ephemeralKey, meta.encType, meta.hopNo);
}

/** `OMQ::handle_onion_request` on a node the previous hop relayed to. */
export async function processRelayed(host: OnionHost, message: Buffer): Promise<OnionReply> {
  let fields: Map<string, Buffer | number>;
  try {
    fields = decodeDict(message);
  } catch (error) {
    return text(400, `Invalid internal onion request: ${(error as Error).message}`);
  }
  const data = fields.get('data');
  const ephemeralKey = fields.get('ephemeral_key');
  const encName = fields.get('enc_type');
  const hop = fields.get('hop_no');
  if (!Buffer.isBuffer(data)) return text(400, 'Invalid internal onion request: required data payload not found');
  if (!Buffer.isBuffer(ephemeralKey)) return text(400, 'Invalid internal onion request: ephemeral key not found');
  if (ephemeralKey.byteLength !== 32) return text(400, `Invalid internal onion request: Key data is invalid: expected 32 bytes, received ${ephemeralKey.byteLength}`);
  let encType: EncType = 'aes-gcm';
  try {
    if (encName !== undefined) encType = parseEncType(Buffer.isBuffer(encName) ? encName.toString('utf8') : String(encName));
  } catch (error) {
    return text(400, `Invalid internal onion request: ${(error as Error).message}`);
  }
  const hopNo = Math.max(1, typeof hop === 'number' ? hop : 0);
  if (hopNo > MAX_ONION_HOPS) return text(400, 'onion request max path length exceeded');
  return processOnion(host, data, ephemeralKey, encType, hopNo);
}

async function processOnion(host: OnionHost, ciphertext: Buffer, clientKey: Buffer, encType: EncType, hopNo: number): Promise<OnionReply> {
  let plaintext: Buffer;
  try {
    plaintext = channelDecrypt(encType, ciphertext, host.keys, clientKey);
  } catch {
    return text(400, 'Invalid ciphertext');
  }
  const inner = processInnerRequest(plaintext);
  const wrap = (status: number, body: unknown, embedJson = false, base64 = true) => wrapProxyResponse(host.keys, clientKey, encType, status, body, embedJson, base64);
  switch (inner.kind) {
    case 'invalid-json':
      return wrap(400, 'Invalid json');
    case 'final': {
      host.note(hopNo, 'destination');
      const answer = host.runRpc(inner.body.toString('utf8'));
      return wrap(answer.status, answer.body, inner.json, inner.base64);
    }
    case 'server': {
      const allowed = (inner.target.startsWith('/loki/') || inner.target.startsWith('/oxen/')) && inner.target.endsWith('/lsrpc') && !inner.target.includes('?');
      if (!(inner.protocol === 'http' || inner.protocol === 'https') || !allowed) return wrap(400, 'Invalid url');
      return text(502, `Could not resolve host: ${inner.host}`); // the fake reaches no outside server
    }
    case 'node': {
      if (!host.knows(inner.next)) return text(502, `Next node not found: ${inner.next.toString('hex')}`);
      host.note(hopNo, 'relay');
      const reply = await host.relay(inner.next, encodeRelayDict(inner.ciphertext, inner.encType, inner.ephemeralKey, hopNo + 1));
      return reply ?? text(504, 'Request time out');
    }
  }
}

/** `wrap_proxy_response`: {"body","status"} (nlohmann's sorted keys), sealed for the client, base64 by default. */
export function wrapProxyResponse(keys: NodeKeys, clientKey: Buffer, encType: EncType, status: number, body: unknown, embedJson: boolean, base64: boolean): OnionReply {
  const inner = typeof body === 'string' ? body : embedJson ? body : nlohmannDump(body);
  const sealed = channelEncrypt(encType, Buffer.from(nlohmannDump({ status, body: inner }), 'utf8'), keys, clientKey);
  return { status: 200, body: base64 ? Buffer.from(sealed.toString('base64'), 'latin1') : sealed };
}

/** json::dump(): compact, object keys in sorted order (nlohmann::json keeps objects in a std::map). */
export function nlohmannDump(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(nlohmannDump).join(',')}]`;
  if (isObject(value)) {
    const keys = Object.keys(value).filter((k) => value[k] !== undefined).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${nlohmannDump(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The bencoded hop message (keys sorted, as bencode requires). */
export function encodeRelayDict(data: Buffer, encType: EncType, ephemeralKey: Buffer, hopNo: number): Buffer {
  const str = (b: Buffer) => Buffer.concat([Buffer.from(`${b.byteLength}:`), b]);
  return Buffer.concat([
    Buffer.from('d'),
    str(Buffer.from('data')),
    str(data),
    str(Buffer.from('enc_type')),
    str(Buffer.from(encType)),
    str(Buffer.from('ephemeral_key')),
    str(ephemeralKey),
    str(Buffer.from('hop_no')),
    Buffer.from(`i${hopNo}e`),
    Buffer.from('e'),
  ]);
}

/** A bencoded dict of strings and integers (what `encodeRelayDict` writes). */
export function decodeDict(message: Buffer): Map<string, Buffer | number> {
  const fields = new Map<string, Buffer | number>();
  let at = 0;
  const readString = (): Buffer => {
    const colon = message.indexOf(0x3a, at);
    const digits = colon === -1 ? '' : message.subarray(at, colon).toString('latin1');
    if (!/^(0|[1-9]\d*)$/.test(digits) || colon + 1 + Number(digits) > message.byteLength) throw new Error('invalid bt string');
    at = colon + 1 + Number(digits);
    return message.subarray(colon + 1, at);
  };
  if (message[at++] !== 0x64) throw new Error('not a bt dict');
  while (at < message.byteLength && message[at] !== 0x65) {
    const key = readString().toString('latin1');
    if (message[at] === 0x69) {
      const end = message.indexOf(0x65, at);
      const digits = end === -1 ? '' : message.subarray(at + 1, end).toString('latin1');
      if (!/^(0|-?[1-9]\d*)$/.test(digits)) throw new Error('invalid bt integer');
      fields.set(key, Number(digits));
      at = end + 1;
    } else fields.set(key, readString());
  }
  if (message[at] !== 0x65 || at + 1 !== message.byteLength) throw new Error('invalid bt dict');
  return fields;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function typeName(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'boolean') return 'boolean';
  return typeof value === 'object' ? 'object' : typeof value;
}

/** json.at(key).get_ref<const std::string&>(), with nlohmann's errors. */
function stringAt(object: Record<string, unknown>, key: string): string {
  if (!(key in object)) throw new JsonError(`[json.exception.out_of_range.403] key '${key}' not found`);
  const value = object[key];
  if (typeof value !== 'string') throw new JsonError(`[json.exception.type_error.303] incompatible ReferenceType for get_ref, actual type is ${typeName(value)}`);
  return value;
}

function optionalBool(object: Record<string, unknown>, key: string): boolean | undefined {
  if (!(key in object)) return undefined;
  const value = object[key];
  if (typeof value !== 'boolean') throw new JsonError(`[json.exception.type_error.302] type must be boolean, but is ${typeName(value)}`);
  return value;
}
