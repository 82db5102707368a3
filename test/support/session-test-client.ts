import { randomBytes } from 'node:crypto';
import { request } from 'node:https';
import { buildContent, defaultTtlMs, type ContentSpec, type Disappearing } from './session-test-client/content.ts';
import { encryptForRecipient, edSign, identityFromSeed, type Identity } from './session-test-client/crypto.ts';
import { FORMATS, wrap, type SessionFormat } from './session-test-client/formats.ts';
import { openMessage, type OpenedMessage } from './session-test-client/open.ts';
import { encode } from './session-test-client/protobuf.ts';

/**
 * A second Session client, for tests only, written from the Session apps' own sources (cited in
 * ./session-test-client/*.ts) and not from Relay's code, so that Relay's client is checked against
 * what real apps send and accept, not against itself:
 *
 * - sending: the wire formats of today's apps (libsession: iOS, Android, Desktop ≥ 1.17.3) and of
 *   older ones (Desktop 1.17.2, pre-sigTimestamp clients, unpadded Content), chosen by `format`
 *   (./session-test-client/formats.ts), and the content kinds a contact's app sends
 *   (./session-test-client/content.ts);
 * - receiving: what libsession's `decode_envelope` and Desktop's content checks accept
 *   (./session-test-client/open.ts), with Desktop's duplicate rule (below);
 * - crypto with node:crypto, and sodium-native only for crypto_box (./session-test-client/crypto.ts);
 * - protobuf by its own code (./session-test-client/protobuf.ts, ./session-test-client/schema.ts);
 * - the storage RPC wrapped in `batch`, as Session's apps send it, over direct HTTPS.
 */

export type { ContentSpec, ContentKind, Disappearing, CallType } from './session-test-client/content.ts';
export type { SessionFormat, FormatLayout } from './session-test-client/formats.ts';
export { FORMATS } from './session-test-client/formats.ts';

export interface TestClientMessage extends OpenedMessage {
  readonly hash: string;
}

export interface SwarmAccess {
  readonly seedUrl: string;
  /** PEM the seed's certificate is checked against. */
  readonly seedCa: string;
  /** The storage servers' time minus ours, if the test skews it (the client signs with that time). */
  readonly clockOffsetMs?: () => number;
}

export interface WireOptions {
  /** Which app's wire format (default 'libsession', what today's apps send). */
  readonly format?: SessionFormat;
  /** What the message carries (default a text message with the `text` argument as body). */
  readonly content?: ContentSpec;
  /**
   * Content.sigTimestamp: a number writes that value (0 included, which receivers treat as a legacy
   * client), null leaves it out. Default: the envelope timestamp, or absent for `format: 'legacy'`.
   */
  readonly sigTimestamp?: number | null;
  /** The sender's profile display name (LokiProfile.displayName). */
  readonly displayName?: string;
  /** The conversation's disappearing-messages setting, carried as Content.expirationType/expirationTimer. */
  readonly disappearing?: Disappearing;
  /** Write Envelope.source = "" (iOS before libsession did). */
  readonly emptySource?: boolean;
}

export interface SendOptions extends WireOptions {
  /** The envelope (sent) timestamp; default the network time now. */
  readonly timestamp?: number;
  /** Storage TTL; default what Desktop uses for the content kind. */
  readonly ttlMs?: number;
}

/** Kinds Desktop stores as messages and drops when sender and sent time repeat (ts/receiver/dataMessage.ts). */
const DEDUPLICATED_KINDS = new Set(['text', 'attachment']);

export class SessionTestClient {
  readonly sessionId: string;
  readonly edPublicKey: Buffer;
  private readonly identity: Identity;
  private readonly seen = new Set<string>();
  private readonly sentAtBySender = new Set<string>();
  /** Why each refused message was refused. */
  readonly rejected: string[] = [];
  /**
   * Messages with the sender and envelope timestamp of one already received: Desktop v1.17.17
   * (`ts/receiver/dataMessage.ts`, `isSwarmMessageDuplicate` before `handleMessageJob`) drops them.
   * Never returned by receive().
   */
  readonly duplicates: TestClientMessage[] = [];

  private constructor(
    readonly seedHex: string,
    private readonly network: SwarmAccess,
  ) {
    this.identity = identityFromSeed(seedHex);
    this.edPublicKey = this.identity.edPublic;
    this.sessionId = this.identity.sessionId;
  }

  static fromSeed(seedHex: string, network: SwarmAccess): SessionTestClient {
    return new SessionTestClient(seedHex, network);
  }

  static random(network: SwarmAccess): SessionTestClient {
    return new SessionTestClient(randomBytes(16).toString('hex'), network);
  }

  get xSecretKeyHex(): string {
    return this.identity.xSecret.toString('hex');
  }

  /** Builds, encrypts and stores a message to `recipient` (namespace 0); resolves with the storage hash. */
  async send(recipient: string, text: string, options: SendOptions = {}): Promise<string> {
    const timestamp = options.timestamp ?? this.networkNow();
    const data = this.wireMessage(recipient, text, timestamp, options);
    const node = await this.swarmNode(recipient);
    const ttl = options.ttlMs ?? defaultTtlMs(options.content ?? { kind: 'text' }, options.disappearing);
    const result = await this.batch(node, [{ method: 'store', params: { pubkey: recipient, timestamp, ttl, data: data.toString('base64') } }]);
    const first = result[0]!;
    if (first.code !== 200) throw new Error(`store answered ${first.code}: ${JSON.stringify(first.body)}`);
    return (first.body as { hash: string }).hash;
  }

  /**
   * The bytes stored for one message: WebSocketMessage → Envelope → session-protocol ciphertext of
   * the padded Content, in the chosen format. A number as 4th argument is the sigTimestamp (the
   * earlier signature of this method).
   */
  wireMessage(recipient: string, text: string, envelopeTimestamp: number, options: WireOptions | number = {}): Buffer {
    const opts: WireOptions = typeof options === 'number' ? { sigTimestamp: options } : options;
    const layout = FORMATS[opts.format ?? 'libsession'];
    const sigTimestamp = opts.sigTimestamp === null ? undefined : (opts.sigTimestamp ?? (layout.sigTimestamp ? envelopeTimestamp : undefined));
    const content = encode(
      'Content',
      buildContent(opts.content ?? { kind: 'text' }, {
        text,
        sentAt: envelopeTimestamp,
        sigTimestamp,
        ...(opts.displayName !== undefined ? { displayName: opts.displayName } : {}),
        ...(opts.disappearing ? { disappearing: opts.disappearing } : {}),
        layout,
      }),
    );
    const recipientX = Buffer.from(recipient.slice(2), 'hex');
    const ciphertext = encryptForRecipient(this.identity, recipientX, layout.pad(content));
    return wrap(layout, envelopeTimestamp, ciphertext, { emptySource: opts.emptySource ?? false });
  }

  /** Retrieves from every node of its swarm (namespace 0) and returns what it had not seen. */
  async receive(): Promise<TestClientMessage[]> {
    const swarm = await this.swarm(this.sessionId);
    const found: TestClientMessage[] = [];
    for (const node of swarm) {
      const timestamp = this.networkNow();
      const signature = edSign(Buffer.from(`retrieve${timestamp}`), this.identity.edPrivate).toString('base64');
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
        const received = this.ingest(message.hash, Buffer.from(message.data, 'base64'));
        if (received) found.push(received);
      }
    }
    return found;
  }

  /**
   * Takes one retrieved message as receive() does: skips a hash already seen, records a refused
   * message in `rejected` and a repeated (sender, envelope timestamp) in `duplicates`; returns the
   * message only if it is new.
   */
  ingest(hash: string, data: Buffer): TestClientMessage | undefined {
    if (this.seen.has(hash)) return undefined;
    this.seen.add(hash);
    const opened = this.open(data);
    if (typeof opened === 'string') {
      this.rejected.push(opened);
      return undefined;
    }
    const received: TestClientMessage = { ...opened, hash };
    if (DEDUPLICATED_KINDS.has(opened.kind)) {
      const key = `${opened.sender} ${opened.envelopeTimestamp}`;
      if (this.sentAtBySender.has(key)) {
        this.duplicates.push(received);
        return undefined;
      }
      this.sentAtBySender.add(key);
    }
    return received;
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

  /** Decodes, decrypts and checks one stored message as libsession and Desktop do; a string says why it was refused. */
  open(data: Buffer): Omit<TestClientMessage, 'hash'> | string {
    return openMessage(data, this.identity);
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
