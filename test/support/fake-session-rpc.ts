/**
 * The request parsing of Session's storage server, as the fake swarm needs it: field types, the
 * aliases, and the exact refusal texts of oxenss/rpc/client_rpc_endpoints.cpp (session-storage-server,
 * MIT), so that the fake refuses what the real server refuses, the way it refuses it. A parse error
 * becomes 400 `invalid request: <text>` (request_handler.cpp).
 */
export class ParseError extends Error {
  override readonly name = 'ParseError';
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type Params = { readonly [key: string]: Json | undefined };

export const NAMESPACE_MIN = -32768;
export const NAMESPACE_MAX = 32767;
export const MAX_MESSAGE_BODY = 76_800;
export const BATCH_REQUEST_MAX = 20;

const isUnsignedInteger = (v: Json | undefined): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isInteger = (v: Json | undefined): v is number => typeof v === 'number' && Number.isInteger(v);

function present(params: Params, name: string): Json | undefined {
  const value = params[name];
  return value === null ? undefined : value;
}

function wrongType(name: string, expected: string): ParseError {
  return new ParseError(`Invalid value given for '${name}': expected ${expected}`);
}

export function stringField(params: Params, name: string): string | undefined {
  const value = present(params, name);
  if (value === undefined) return undefined;
  if (typeof value !== 'string') throw wrongType(name, 'string');
  return value;
}

export function intField(params: Params, name: string): number | undefined {
  const value = present(params, name);
  if (value === undefined) return undefined;
  if (!isInteger(value)) throw wrongType(name, 'integer');
  return value;
}

/** A millisecond timestamp: a non-negative integer, and not one that looks like seconds. */
export function timestampField(params: Params, name: string): number | undefined {
  const value = present(params, name);
  if (value === undefined) return undefined;
  if (!isUnsignedInteger(value)) throw wrongType(name, 'integer timestamp (in milliseconds)');
  return checkMilliseconds(value, name);
}

function checkMilliseconds(value: number, name: string): number {
  if (value < 1_000_000_000) throw new ParseError(`Invalid timestamp for '${name}': timestamp must be in milliseconds`);
  return value;
}

export function namespaceField(params: Params, name: string): number | undefined {
  const value = present(params, name);
  if (value === undefined) return undefined;
  if (!isInteger(value)) throw wrongType(name, '16-bit integer');
  if (value < NAMESPACE_MIN || value > NAMESPACE_MAX) throw new ParseError(`Invalid value given for '${name}': value out of range`);
  return value;
}

/** `timestamp` and `ttl` of `store` may also come as decimal strings (backwards compatibility). */
export function stringifiedField(params: Params, name: string, unsigned: boolean): number | undefined {
  const value = present(params, name);
  if (typeof value === 'string') {
    if (!/^-?\d+$/.test(value) || (unsigned && value.startsWith('-'))) throw new ParseError(`Invalid value given for '${name}': ${JSON.stringify(value)}`);
    return Number(value);
  }
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !(unsigned ? isUnsignedInteger(value) : isInteger(value))) throw wrongType(name, unsigned ? 'positive integer' : 'integer');
  return value;
}

export function require<T>(name: string, value: T | undefined): T {
  if (value === undefined) throw new ParseError(`Required field '${name}' missing`);
  return value;
}

export function exactlyOneOf<T>(first: string, a: T | undefined, second: string, b: T | undefined, alias = false): T {
  if (a !== undefined && b !== undefined) throw new ParseError(`Cannot specify both '${first}' and '${second}'`);
  const value = a ?? b;
  if (value === undefined) throw new ParseError(alias ? `Required field '${first}' missing` : `Required field '${first}' or '${second}' missing`);
  return value;
}

/** A user pubkey: 66 hex digits, network byte first. */
export function loadPubkey(hex: string, message = 'Pubkey must be 66 hex digits (33 bytes) long'): { netid: number; key: Buffer; hex: string } {
  if (!/^[0-9a-fA-F]{66}$/.test(hex)) throw new ParseError(message);
  const bytes = Buffer.from(hex, 'hex');
  return { netid: bytes[0]!, key: bytes.subarray(1), hex: hex.toLowerCase() };
}

/** oxenc's is_base64: standard or URL-safe alphabet, padded or not, never a lone trailing character. */
export function isBase64(value: string): boolean {
  if (!/^[A-Za-z0-9+/\-_]*={0,2}$/.test(value)) return false;
  const unpadded = value.replace(/=+$/, '');
  if (value.includes('=') && value.length % 4 !== 0) return false;
  return unpadded.length % 4 !== 1;
}

export function fromBase64(value: string): Buffer {
  return Buffer.from(value.replace(/-/g, '+').replace(/_/g, '/'), 'base64');
}

export interface SignatureFields {
  readonly pubkeyEd25519?: Buffer;
  readonly signature: Buffer;
}

/** The signature part of a request (load_pk_signature): parsed here, verified by the handler. */
export function loadSignature(pubkey: { netid: number }, pkEd: string | undefined, signature: string | undefined): SignatureFields {
  const sig = require('signature', signature);
  let pubkeyEd25519: Buffer | undefined;
  if (pkEd !== undefined) {
    if (pubkey.netid !== 5) throw new ParseError('pubkey_ed25519 is only permitted for 05[...] pubkeys');
    if (pkEd.length === 64) {
      if (!/^[0-9a-fA-F]{64}$/.test(pkEd)) throw new ParseError('invalid pubkey_ed25519: value is not hex');
      pubkeyEd25519 = Buffer.from(pkEd, 'hex');
    } else if (Buffer.byteLength(pkEd, 'latin1') === 32) pubkeyEd25519 = Buffer.from(pkEd, 'latin1');
    else throw new ParseError('Invalid pubkey_ed25519: expected 64 hex char or 32 byte pubkey');
  }
  if (!isBase64(sig) || !(sig.length === 86 || (sig.length === 88 && sig.slice(86) === '=='))) {
    throw new ParseError('invalid signature: expected base64 encoded Ed25519 signature');
  }
  return { ...(pubkeyEd25519 ? { pubkeyEd25519 } : {}), signature: fromBase64(sig) };
}

export const isPublicInboxNamespace = (ns: number) => ns % 10 === 0;
export const isPublicOutboxNamespace = (ns: number) => ns < 0 && -ns % 20 === 1;
export const isNoAuthRetrieveNamespace = (ns: number) => ns === -10 || isPublicOutboxNamespace(ns);

export interface StoreRequest {
  readonly pubkey: { netid: number; key: Buffer; hex: string };
  readonly namespace: number;
  readonly timestamp: number;
  readonly expiry: number;
  readonly data: Buffer;
  readonly auth?: SignatureFields & { readonly sigTimestamp: number };
}

export function loadStore(params: Params): StoreRequest {
  // Fields are read in the server's (alphabetical) order, so the first bad one is the one named.
  const data = stringField(params, 'data');
  const expiry = timestampField(params, 'expiry');
  const namespace = namespaceField(params, 'namespace') ?? 0;
  const pubKeyAlt = stringField(params, 'pubKey');
  const pubkeyMain = stringField(params, 'pubkey');
  const pkEd = stringField(params, 'pubkey_ed25519');
  const sigTimestamp = timestampField(params, 'sig_timestamp');
  const signature = stringField(params, 'signature');
  if (stringField(params, 'subaccount') !== undefined) throw new ParseError('subaccounts are not supported by this fake');
  const rawTimestamp = stringifiedField(params, 'timestamp', false);
  const ttl = stringifiedField(params, 'ttl', true);
  const timestamp = require('timestamp', rawTimestamp);
  exactlyOneOf('expiry', expiry, 'ttl', ttl);
  const pkHex = exactlyOneOf('pubkey', pubkeyMain, 'pubKey', pubKeyAlt, true);
  const pubkey = loadPubkey(pkHex);
  const auth = signature !== undefined ? { ...loadSignature(pubkey, pkEd, signature), sigTimestamp: sigTimestamp ?? timestamp } : undefined;
  const body = require('data', data);
  if (!isBase64(body)) throw new ParseError("Invalid 'data' value: not base64 encoded");
  if (body.length > (MAX_MESSAGE_BODY / 3) * 4) throw new ParseError(`Message body exceeds maximum allowed length of ${MAX_MESSAGE_BODY} bytes`);
  return { pubkey, namespace, timestamp, expiry: expiry ?? timestamp + ttl!, data: fromBase64(body), ...(auth ? { auth } : {}) };
}

export interface RetrieveRequest {
  readonly pubkey: { netid: number; key: Buffer; hex: string };
  readonly namespace: number;
  readonly lastHash?: string;
  readonly maxCount?: number;
  readonly maxSize?: number;
  readonly auth?: SignatureFields & { readonly timestamp: number };
}

export function loadRetrieve(params: Params): RetrieveRequest {
  const lastHashAlt = stringField(params, 'lastHash');
  let lastHash = stringField(params, 'last_hash');
  const maxCount = intField(params, 'max_count');
  const maxSize = intField(params, 'max_size');
  const namespace = namespaceField(params, 'namespace');
  const pubKeyAlt = stringField(params, 'pubKey');
  const pubkeyMain = stringField(params, 'pubkey');
  const pkEd = stringField(params, 'pubkey_ed25519');
  const signature = stringField(params, 'signature');
  if (stringField(params, 'subaccount') !== undefined) throw new ParseError('subaccounts are not supported by this fake');
  const timestamp = timestampField(params, 'timestamp');
  const pubkey = loadPubkey(exactlyOneOf('pubkey', pubkeyMain, 'pubKey', pubKeyAlt, true));
  let auth: RetrieveRequest['auth'];
  if (pkEd !== undefined || signature !== undefined || timestamp !== undefined || (namespace !== undefined && !isNoAuthRetrieveNamespace(namespace))) {
    const fields = loadSignature(pubkey, pkEd, signature);
    auth = { ...fields, timestamp: require('timestamp', timestamp) };
  }
  if (lastHash !== undefined && lastHashAlt !== undefined) throw new ParseError("Cannot specify both 'last_hash' and 'lastHash'");
  lastHash ??= lastHashAlt;
  if (lastHash === '') lastHash = undefined;
  if (lastHash !== undefined) {
    if (lastHash.length !== 43) throw new ParseError('Invalid last_hash: expected base64 (43 chars)');
    if (!isBase64(lastHash)) throw new ParseError('Invalid last_hash: not base64');
  }
  return {
    pubkey,
    namespace: namespace ?? 0,
    ...(lastHash !== undefined ? { lastHash } : {}),
    ...(maxCount !== undefined ? { maxCount } : {}),
    ...(maxSize !== undefined ? { maxSize } : {}),
    ...(auth ? { auth } : {}),
  };
}

export function loadGetSwarm(params: Params): { netid: number; key: Buffer; hex: string } {
  const pkHex = exactlyOneOf('pubkey', stringField(params, 'pubkey'), 'pubKey', stringField(params, 'pubKey'), true);
  return loadPubkey(pkHex, 'Pubkey must be 66 hex digits/33 bytes long');
}
