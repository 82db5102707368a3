import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign, verify, type KeyObject } from 'node:crypto';
import { request } from 'node:https';
import sodiumNative from 'sodium-native';

/**
 * A second Session client, for tests only, written from the protocol notes
 * (../shared/notes/session-protocol.md) without any of Relay's Session code, so that Relay's client
 * is checked against something other than itself:
 *
 * - keys with node:crypto: Ed25519 from the seed padded to 32 bytes, the X25519 secret as
 *   clamp(SHA-512(seed)[0..32]), its public key by X25519, Session ID "05" ‖ hex;
 * - signatures with node:crypto's Ed25519;
 * - the sealed box assembled by hand: an ephemeral X25519 key, nonce = BLAKE2b-192(ephemeral public
 *   ‖ recipient public), crypto_box (libsodium's XSalsa20-Poly1305, the only call taken from it);
 * - protobuf bytes written and read by its own few lines;
 * - the storage RPC wrapped in `batch`, as Session's apps send it (Relay sends plain methods).
 */
const sodium = sodiumNative as unknown as {
  crypto_box_easy(c: Buffer, m: Buffer, n: Buffer, pk: Buffer, sk: Buffer): void;
  crypto_box_open_easy(m: Buffer, c: Buffer, n: Buffer, pk: Buffer, sk: Buffer): boolean;
  crypto_generichash(out: Buffer, input: Buffer): void;
};

const ED_PKCS8 = Buffer.from('302e020100300506032b657004220420', 'hex');
const X_PKCS8 = Buffer.from('302e020100300506032b656e04220420', 'hex');
const ED_SPKI = Buffer.from('302a300506032b6570032100', 'hex');

export interface TestClientMessage {
  readonly hash: string;
  readonly sender: string;
  readonly text: string;
  readonly envelopeTimestamp: number;
  readonly sigTimestamp?: number;
}

export interface SwarmAccess {
  readonly seedUrl: string;
  /** PEM the seed's certificate is checked against. */
  readonly seedCa: string;
  /** The storage servers' time minus ours, if the test skews it (the client signs with that time). */
  readonly clockOffsetMs?: () => number;
}

export class SessionTestClient {
  readonly sessionId: string;
  readonly edPublicKey: Buffer;
  private readonly edPrivate: KeyObject;
  private readonly xSecret: Buffer;
  private readonly xPublic: Buffer;
  private readonly seen = new Set<string>();
  readonly rejected: string[] = [];

  private constructor(
    readonly seedHex: string,
    private readonly network: SwarmAccess,
  ) {
    const seed32 = Buffer.concat([Buffer.from(seedHex, 'hex'), Buffer.alloc(16)]);
    this.edPrivate = createPrivateKey({ key: Buffer.concat([ED_PKCS8, seed32]), format: 'der', type: 'pkcs8' });
    this.edPublicKey = spkiTail(createPublicKey(this.edPrivate));
    const scalar = createHash('sha512').update(seed32).digest().subarray(0, 32);
    scalar[0]! &= 248;
    scalar[31]! &= 127;
    scalar[31]! |= 64;
    this.xSecret = Buffer.from(scalar);
    this.xPublic = spkiTail(createPublicKey(xPrivateKey(this.xSecret)));
    this.sessionId = `05${this.xPublic.toString('hex')}`;
  }

  static fromSeed(seedHex: string, network: SwarmAccess): SessionTestClient {
    return new SessionTestClient(seedHex, network);
  }

  static random(network: SwarmAccess): SessionTestClient {
    return new SessionTestClient(randomBytes(16).toString('hex'), network);
  }

  get xSecretKeyHex(): string {
    return this.xSecret.toString('hex');
  }

  /** Builds, encrypts and stores a text message to `recipient`; resolves with the storage hash. */
  async send(recipient: string, text: string, options: { readonly timestamp?: number; readonly sigTimestamp?: number | null; readonly ttlMs?: number } = {}): Promise<string> {
    const timestamp = options.timestamp ?? this.networkNow();
    const data = this.wireMessage(recipient, text, timestamp, options.sigTimestamp === null ? undefined : (options.sigTimestamp ?? timestamp));
    const node = await this.swarmNode(recipient);
    const result = await this.batch(node, [{ method: 'store', params: { pubkey: recipient, timestamp, ttl: options.ttlMs ?? 14 * 24 * 3_600_000, data: data.toString('base64') } }]);
    const first = result[0]!;
    if (first.code !== 200) throw new Error(`store answered ${first.code}: ${JSON.stringify(first.body)}`);
    return (first.body as { hash: string }).hash;
  }

  /** The wire bytes of a text message (WebSocketMessage → Envelope → sealed, signed Content). */
  wireMessage(recipient: string, text: string, envelopeTimestamp: number, sigTimestamp: number | undefined): Buffer {
    const recipientX = Buffer.from(recipient.slice(2), 'hex');
    const dataMessage = Buffer.concat([field(1, Buffer.from(text, 'utf8')), varintField(7, envelopeTimestamp)]);
    const content = Buffer.concat([field(1, dataMessage), ...(sigTimestamp !== undefined ? [varintField(15, sigTimestamp)] : [])]);
    const blocks = Math.ceil((content.length + 2) / 160);
    const padded = Buffer.alloc(blocks * 160 - 1);
    content.copy(padded);
    padded[content.length] = 0x80;
    const signature = sign(null, Buffer.concat([padded, this.edPublicKey, recipientX]), this.edPrivate);
    const sealed = sealTo(recipientX, Buffer.concat([padded, this.edPublicKey, signature]));
    const envelope = Buffer.concat([varintField(1, 6), varintField(5, envelopeTimestamp), field(8, sealed)]);
    const requestMessage = Buffer.concat([field(1, Buffer.from('PUT')), field(2, Buffer.from('/api/v1/message')), field(3, envelope), varintField(4, 0)]);
    return Buffer.concat([varintField(1, 1), field(2, requestMessage)]);
  }

  /** Retrieves from every node of its swarm (all namespace 0) and returns what it had not seen. */
  async receive(): Promise<TestClientMessage[]> {
    const swarm = await this.swarm(this.sessionId);
    const found: TestClientMessage[] = [];
    for (const node of swarm) {
      const timestamp = this.networkNow();
      const signature = sign(null, Buffer.from(`retrieve${timestamp}`), this.edPrivate).toString('base64');
      let results: { code: number; body: unknown }[];
      try {
        results = await this.batch(node, [
          { method: 'retrieve', params: { pubkey: this.sessionId, pubkey_ed25519: this.edPublicKey.toString('hex'), timestamp, signature, namespace: 0 } },
        ]);
      } catch (error) {
        if (error instanceof HttpUnreachable) continue; // a node that is down: the others have the messages
        throw error;
      }
      const result = results[0];
      if (!result || result.code !== 200) throw new Error(`retrieve answered ${result?.code}: ${JSON.stringify(result?.body)}`);
      for (const message of (result.body as { messages: { hash: string; data: string }[] }).messages) {
        if (this.seen.has(message.hash)) continue;
        this.seen.add(message.hash);
        const opened = this.open(Buffer.from(message.data, 'base64'));
        if (typeof opened === 'string') this.rejected.push(opened);
        else found.push({ ...opened, hash: message.hash });
      }
    }
    return found;
  }

  /** Polls until `count` new messages arrived (or the time is up). */
  async waitForMessages(count: number, timeoutMs = 10_000): Promise<TestClientMessage[]> {
    const deadline = Date.now() + timeoutMs;
    const all: TestClientMessage[] = [];
    while (all.length < count) {
      all.push(...(await this.receive()));
      if (all.length >= count) break;
      if (Date.now() > deadline) throw new Error(`the test client received ${all.length} of ${count} messages in ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return all;
  }

  /** Decrypts and checks one stored message; a string says why it was refused. */
  open(data: Buffer): Omit<TestClientMessage, 'hash'> | string {
    const wsFields = readMessage(data);
    if (wsFields.get(1)?.[0] !== 1n) return 'not a request';
    const req = readMessage(wsFields.get(2)?.[0] as Buffer);
    if ((req.get(2)?.[0] as Buffer | undefined)?.toString() !== '/api/v1/message') return 'wrong path';
    const envelope = readMessage(req.get(3)?.[0] as Buffer);
    if (envelope.get(1)?.[0] !== 6n) return 'not a session message';
    const envelopeTimestamp = Number(envelope.get(5)?.[0] as bigint);
    const sealed = envelope.get(8)?.[0] as Buffer;
    const inner = openSealed(sealed, this.xPublic, this.xSecret);
    if (!inner) return 'does not open';
    const padded = inner.subarray(0, inner.length - 96);
    const senderEd = inner.subarray(inner.length - 96, inner.length - 64);
    const signature = inner.subarray(inner.length - 64);
    const senderKey = createPublicKey({ key: Buffer.concat([ED_SPKI, senderEd]), format: 'der', type: 'spki' });
    if (!verify(null, Buffer.concat([padded, senderEd, this.xPublic]), senderKey, signature)) return 'bad signature';
    let end = padded.length - 1;
    while (end >= 0 && padded[end] === 0) end--;
    if (padded[end] !== 0x80) return 'bad padding';
    const content = readMessage(padded.subarray(0, end));
    const sigTimestamp = content.get(15)?.[0] as bigint | undefined;
    if (sigTimestamp !== undefined && Number(sigTimestamp) !== envelopeTimestamp) return 'sigTimestamp differs';
    const dataMessage = readMessage(content.get(1)?.[0] as Buffer);
    const text = (dataMessage.get(1)?.[0] as Buffer | undefined)?.toString('utf8') ?? '';
    return {
      sender: `05${edToMontgomery(senderEd).toString('hex')}`,
      text,
      envelopeTimestamp,
      ...(sigTimestamp !== undefined ? { sigTimestamp: Number(sigTimestamp) } : {}),
    };
  }

  private networkNow(): number {
    return Date.now() + (this.network.clockOffsetMs?.() ?? 0);
  }

  private async swarmNode(sessionId: string): Promise<{ ip: string; port: number }> {
    const swarm = await this.swarm(sessionId);
    return swarm[Math.floor(Math.random() * swarm.length)]!;
  }

  private async swarm(sessionId: string): Promise<{ ip: string; port: number }[]> {
    const seedAnswer = await postJson(new URL('/json_rpc', this.network.seedUrl), { jsonrpc: '2.0', id: 1, method: 'get_n_service_nodes', params: { active_only: true } }, this.network.seedCa);
    const nodes = (seedAnswer.body as { result: { service_node_states: { public_ip: string; storage_port: number }[] } }).result.service_node_states;
    const start = Math.floor(Math.random() * nodes.length);
    for (let i = 0; i < nodes.length; i++) {
      const any = nodes[(start + i) % nodes.length]!;
      try {
        const answer = await postJson(new URL(`https://${any.public_ip}:${any.storage_port}/storage_rpc/v1`), { method: 'get_swarm', params: { pubkey: sessionId } });
        return (answer.body as { snodes: { ip: string; port_https: number }[] }).snodes.map((n) => ({ ip: n.ip, port: n.port_https }));
      } catch (error) {
        if (!(error instanceof HttpUnreachable)) throw error;
      }
    }
    throw new Error('no service node answered get_swarm');
  }

  private async batch(node: { ip: string; port: number }, requests: object[]): Promise<{ code: number; body: unknown }[]> {
    const answer = await postJson(new URL(`https://${node.ip}:${node.port}/storage_rpc/v1`), { method: 'batch', params: { requests } });
    if (answer.status !== 200) throw new Error(`batch answered ${answer.status}: ${JSON.stringify(answer.body)}`);
    return (answer.body as { results: { code: number; body: unknown }[] }).results;
  }
}

function xPrivateKey(scalar: Buffer): KeyObject {
  return createPrivateKey({ key: Buffer.concat([X_PKCS8, scalar]), format: 'der', type: 'pkcs8' });
}

function spkiTail(key: KeyObject): Buffer {
  return Buffer.from(key.export({ format: 'der', type: 'spki' })).subarray(-32);
}

function boxNonce(ephemeralPublic: Buffer, recipientPublic: Buffer): Buffer {
  const nonce = Buffer.alloc(24);
  sodium.crypto_generichash(nonce, Buffer.concat([ephemeralPublic, recipientPublic]));
  return nonce;
}

function sealTo(recipientX: Buffer, message: Buffer): Buffer {
  const { privateKey } = generateKeyPairSync('x25519');
  const ephemeralPublic = spkiTail(createPublicKey(privateKey));
  const ephemeralSecret = Buffer.from(privateKey.export({ format: 'der', type: 'pkcs8' })).subarray(-32);
  const box = Buffer.alloc(message.length + 16);
  sodium.crypto_box_easy(box, message, boxNonce(ephemeralPublic, recipientX), recipientX, ephemeralSecret);
  return Buffer.concat([ephemeralPublic, box]);
}

function openSealed(sealed: Buffer, ownPublic: Buffer, ownSecret: Buffer): Buffer | undefined {
  if (sealed.length < 48 + 96 + 1) return undefined;
  const ephemeralPublic = sealed.subarray(0, 32);
  const box = sealed.subarray(32);
  const message = Buffer.alloc(box.length - 16);
  return sodium.crypto_box_open_easy(message, box, boxNonce(ephemeralPublic, ownPublic), ephemeralPublic, ownSecret) ? message : undefined;
}

/** Edwards y → Montgomery u = (1 + y) / (1 − y) mod 2²⁵⁵ − 19, the birational map of the curves. */
function edToMontgomery(edPublic: Buffer): Buffer {
  const p = (1n << 255n) - 19n;
  const bytes = Buffer.from(edPublic);
  bytes[31]! &= 0x7f;
  const y = BigInt(`0x${Buffer.from(bytes).reverse().toString('hex')}`);
  const modPow = (base: bigint, exp: bigint): bigint => {
    let result = 1n;
    let b = base % p;
    let e = exp;
    while (e > 0n) {
      if (e & 1n) result = (result * b) % p;
      b = (b * b) % p;
      e >>= 1n;
    }
    return result;
  };
  const u = ((1n + y) * modPow((1n - y + p) % p, p - 2n)) % p;
  return Buffer.from(u.toString(16).padStart(64, '0'), 'hex').reverse();
}

function varint(value: number | bigint): Buffer {
  let v = BigInt(value);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return Buffer.from(out);
}

function field(number: number, bytes: Buffer): Buffer {
  return Buffer.concat([varint((number << 3) | 2), varint(bytes.length), bytes]);
}

function varintField(number: number, value: number): Buffer {
  return Buffer.concat([varint(number << 3), varint(value)]);
}

/** Field number → values (varints as bigint, length-delimited as Buffer). */
function readMessage(bytes: Buffer | undefined): Map<number, (bigint | Buffer)[]> {
  const fields = new Map<number, (bigint | Buffer)[]>();
  if (!bytes) return fields;
  let i = 0;
  const readVarint = () => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const b = bytes[i++];
      if (b === undefined) throw new Error('truncated');
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < bytes.length) {
    const key = Number(readVarint());
    const number = key >> 3;
    let value: bigint | Buffer;
    if ((key & 7) === 0) value = readVarint();
    else if ((key & 7) === 2) {
      const length = Number(readVarint());
      value = bytes.subarray(i, i + length);
      i += length;
    } else if ((key & 7) === 1) {
      value = bytes.subarray(i, i + 8);
      i += 8;
    } else if ((key & 7) === 5) {
      value = bytes.subarray(i, i + 4);
      i += 4;
    } else throw new Error('unsupported wire type');
    fields.set(number, [...(fields.get(number) ?? []), value]);
  }
  return fields;
}

class HttpUnreachable extends Error {}

function postJson(url: URL, payload: object, ca?: string): Promise<{ status: number; body: unknown }> {
  const body = Buffer.from(JSON.stringify(payload));
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length }, ...(ca ? { ca } : { rejectUnauthorized: false }), timeout: 10_000 },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown = text;
          if ((res.headers['content-type'] ?? '').includes('json')) parsed = JSON.parse(text);
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error) => reject(new HttpUnreachable(error.message)));
    req.end(body);
  });
}
