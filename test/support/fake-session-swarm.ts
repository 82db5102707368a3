import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { Agent, createServer, request, type Server } from 'node:https';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sodiumNative from 'sodium-native';
import {
  BATCH_REQUEST_MAX,
  isNoAuthRetrieveNamespace,
  isPublicInboxNamespace,
  isPublicOutboxNamespace,
  loadGetSwarm,
  loadRetrieve,
  loadStore,
  ParseError,
  stringField,
  type Json,
  type Params,
  type RetrieveRequest,
  type StoreRequest,
} from './fake-session-rpc.ts';
import { processOnionV2, processRelayed, RELAY_PATH, type OnionHost, type OnionReply } from './fake-session-onion.ts';

/**
 * A faithful fake of Session's service-node network for tests: a seed node and several storage
 * servers, each its own HTTPS server on 127.0.0.1 with its own Ed25519/X25519 keys and a self-signed
 * certificate made at start (openssl), grouped in swarms. It answers the seed's
 * `get_n_service_nodes` and the storage RPC (`/storage_rpc/v1`: `get_swarm`, `store`, `retrieve`,
 * `info`, `oxend_request`, `batch`, `sequence`) with the real server's checks and answers, read from
 * session-storage-server (MIT; oxenss/rpc/request_handler.cpp, client_rpc_endpoints.cpp,
 * snode/swarm.cpp, storage/database.cpp, server/https.cpp):
 *
 * - a Session ID belongs to the swarm whose id is nearest the XOR of its key's four big-endian
 *   64-bit words (with wrap-around); any other node answers 421 with that swarm;
 * - `store`: TTL 10 s–14 days (30 days for private namespaces) else 403; timestamp more than 10 s
 *   ahead, or expiry more than 10 s past, 406; namespaces not divisible by 10 need a signature over
 *   "store" ‖ namespace ‖ sig_timestamp within 60 s; 76,800 bytes at most; stored on every node of
 *   the swarm (replication), each with its own row ids; the hash is BLAKE2b-256 of network byte ‖
 *   key ‖ namespace ‖ data;
 * - `retrieve`: signed (except the no-auth namespaces) over "retrieve" ‖ namespace ‖ timestamp
 *   within 60 s, with the ed→x key check; rows after the row of `last_hash` on that node, or all of
 *   them when that node does not know it; `max_count`/`max_size` and `more` as the server has them;
 * - every JSON answer carries `t` (the node's clock, which tests can skew) and `hf`;
 * - 410 for the long-poll header, 413 over 10 MiB, 429 past the per-IP token bucket (600, +300/s);
 * - onion requests (`POST /onion_req/v2`, and the node-to-node hop) as ./fake-session-onion.ts
 *   serves them, the destination running the same storage RPC as a direct request; `requests`
 *   records whether each storage request came directly or through an onion.
 */
const sodium = sodiumNative as unknown as {
  crypto_sign_keypair(pk: Buffer, sk: Buffer): void;
  crypto_sign_detached(sig: Buffer, m: Buffer, sk: Buffer): void;
  crypto_sign_verify_detached(sig: Buffer, m: Buffer, pk: Buffer): boolean;
  crypto_sign_ed25519_pk_to_curve25519(x: Buffer, ed: Buffer): void;
  crypto_sign_ed25519_sk_to_curve25519(x: Buffer, ed: Buffer): void;
  crypto_generichash(out: Buffer, input: Buffer): void;
  randombytes_buf(buf: Buffer): void;
};

const TTL_MINIMUM = 10_000;
const TTL_MAXIMUM = 14 * 24 * 3_600_000;
const TTL_MAXIMUM_PRIVATE = 30 * 24 * 3_600_000;
const STORE_TOLERANCE = 10_000;
const SIGNATURE_TOLERANCE = 60_000;
const RETRIEVE_MAX_SIZE = 7_800_000;
const MAX_REQUEST_BODY_SIZE = 10 * 1024 * 1024;
const HARDFORK: [number, number] = [19, 3];
const VERSION = [2, 8, 0];

export interface FakeSwarmOptions {
  readonly swarms?: number;
  readonly nodesPerSwarm?: number;
  /** The nodes' clock minus the real one (ms); changeable later with `setClockOffset`. */
  readonly clockOffsetMs?: number;
  /** The real server's per-IP token bucket; off for benches. */
  readonly rateLimit?: boolean;
}

interface Row {
  readonly id: number;
  readonly hash: string;
  readonly namespace: number;
  readonly timestamp: number;
  expiry: number;
  readonly data: Buffer;
}

export interface FakeSnode {
  readonly index: number;
  readonly swarmIndex: number;
  readonly ip: string;
  port: number;
  readonly ed25519: string;
  readonly x25519: string;
  readonly legacy: string;
}

interface NodeState {
  readonly info: FakeSnode;
  readonly edSecretKey: Buffer;
  /** The X25519 secret of the node's Ed25519 key: onion layers for this node open with it. */
  readonly xSecretKey: Buffer;
  readonly server: Server;
  readonly sockets: Set<Socket>;
  nextId: number;
  /** pubkey hex → rows in id order. */
  readonly rows: Map<string, Row[]>;
  down: boolean;
  /** Replications held back while paused (applied by `resumeReplication`). */
  paused: boolean;
  readonly held: StoreRequest[];
  bucket: { tokens: number; at: number };
}

export interface RequestRecord {
  readonly node: number;
  readonly method: string;
  readonly status: number;
  /** Straight to /storage_rpc/v1 (the node saw the client's address), or as an onion's destination. */
  readonly via: 'direct' | 'onion';
}

/** One node's part in an onion request: hop 0 is the guard, which alone saw the client's address. */
export interface OnionHopRecord {
  readonly node: number;
  readonly hopNo: number;
  readonly role: 'relay' | 'destination';
}

type Answer = { readonly status: number; readonly body: Json | string };

export class FakeSessionSwarm {
  readonly requests: RequestRecord[] = [];
  readonly onionHops: OnionHopRecord[] = [];
  /** Node-to-node onion hops (the real server's OxenMQ `sn.onion_request`), carried over HTTPS. */
  private readonly relayAgent = new Agent({ keepAlive: true, rejectUnauthorized: false });
  /** Only service nodes may send that hop (OxenMQ `sn.` commands need a service node's key): only the swarm's own nodes know this. */
  private readonly relayToken = randomHex(16);
  private clockOffsetMs: number;
  private readonly moved = new Map<string, number>();
  private readonly failing = new Map<string, { status: number; body: string; times: number }>();

  private constructor(
    private readonly nodeStates: NodeState[],
    private readonly swarmIds: bigint[],
    private readonly seed: { server: Server; port: number; sockets: Set<Socket> },
    readonly certificates: { readonly seed: string },
    private readonly certDir: string,
    private readonly rateLimit: boolean,
    clockOffsetMs: number,
  ) {
    this.clockOffsetMs = clockOffsetMs;
  }

  static async start(options: FakeSwarmOptions = {}): Promise<FakeSessionSwarm> {
    const swarmCount = options.swarms ?? 2;
    const perSwarm = options.nodesPerSwarm ?? 3;
    const certDir = mkdtempSync(join(tmpdir(), 'fake-session-swarm-'));
    const swarmIds = Array.from({ length: swarmCount }, (_, i) => ((BigInt(i) * 2n + 1n) << 64n) / (BigInt(swarmCount) * 2n));
    const states: NodeState[] = [];
    let self!: FakeSessionSwarm;
    for (let index = 0; index < swarmCount * perSwarm; index++) {
      const edPk = Buffer.alloc(32);
      const edSk = Buffer.alloc(64);
      sodium.crypto_sign_keypair(edPk, edSk);
      const x = Buffer.alloc(32);
      sodium.crypto_sign_ed25519_pk_to_curve25519(x, edPk);
      const xSk = Buffer.alloc(32);
      sodium.crypto_sign_ed25519_sk_to_curve25519(xSk, edSk);
      const legacy = Buffer.alloc(32);
      sodium.randombytes_buf(legacy);
      const tls = selfSignedCertificate(certDir, `node${index}`);
      const sockets = new Set<Socket>();
      const state: NodeState = {
        info: { index, swarmIndex: index % swarmCount, ip: '127.0.0.1', port: 0, ed25519: edPk.toString('hex'), x25519: x.toString('hex'), legacy: legacy.toString('hex') },
        edSecretKey: edSk,
        xSecretKey: xSk,
        server: createServer(tls, (req, res) => void self.onStorageRequest(state, req, res)),
        sockets,
        nextId: 1,
        rows: new Map(),
        down: false,
        paused: false,
        held: [],
        bucket: { tokens: 600, at: Date.now() },
      };
      trackSockets(state.server, sockets);
      states.push(state);
    }
    const seedTls = selfSignedCertificate(certDir, 'seed');
    const seedSockets = new Set<Socket>();
    const seedServer = createServer(seedTls, (req, res) => void self.onSeedRequest(req, res));
    trackSockets(seedServer, seedSockets);
    for (const state of states) state.info.port = await listen(state.server);
    const seedPort = await listen(seedServer);
    self = new FakeSessionSwarm(states, swarmIds, { server: seedServer, port: seedPort, sockets: seedSockets }, { seed: seedTls.cert }, certDir, options.rateLimit ?? true, options.clockOffsetMs ?? 0);
    return self;
  }

  get seedUrl(): string {
    return `https://127.0.0.1:${this.seed.port}`;
  }

  get nodes(): readonly FakeSnode[] {
    return this.nodeStates.map((s) => s.info);
  }

  /** The nodes whose swarm holds this Session ID now. */
  swarmOf(sessionId: string): FakeSnode[] {
    const swarm = this.swarmIndexOf(sessionId);
    return this.nodes.filter((n) => n.swarmIndex === swarm);
  }

  setClockOffset(ms: number): void {
    this.clockOffsetMs = ms;
  }

  /**
   * The network reassigns a Session ID to another swarm (as when swarms split or merge): its
   * messages are copied to the new swarm's nodes, and the old nodes answer 421.
   */
  moveAccount(sessionId: string, toSwarm: number): void {
    const from = this.swarmIndexOf(sessionId);
    this.moved.set(sessionId.toLowerCase(), toSwarm);
    const source = this.nodeStates.find((s) => s.info.swarmIndex === from)!;
    for (const state of this.nodeStates.filter((s) => s.info.swarmIndex === toSwarm)) {
      for (const row of source.rows.get(sessionId.toLowerCase()) ?? []) this.insert(state, sessionId.toLowerCase(), row);
    }
  }

  /**
   * The next `times` stores to this Session ID (on any node) are answered `status` with `body`:
   * 503 `Service node is not ready: …` as a node that is starting, or a refusal.
   */
  failNextStores(sessionId: string, status: number, body: string, times: number): void {
    this.failing.set(sessionId.toLowerCase(), { status, body, times });
  }

  /**
   * A node that is down accepts connections and closes them at once: as a guard it gives the client
   * no answer; as a relay or destination the node before it answers 504 `Request time out`.
   */
  setDown(nodeIndex: number, down: boolean): void {
    const state = this.nodeStates[nodeIndex]!;
    state.down = down;
    if (down) for (const socket of state.sockets) socket.destroy();
  }

  /** While paused, stores forwarded to this node wait; resuming applies them (new row ids). */
  pauseReplication(nodeIndex: number): void {
    this.nodeStates[nodeIndex]!.paused = true;
  }

  resumeReplication(nodeIndex: number): void {
    const state = this.nodeStates[nodeIndex]!;
    state.paused = false;
    for (const request of state.held.splice(0)) this.storeLocally(state, request);
  }

  /** What one node holds for a Session ID in a namespace, in row order. */
  storedOn(nodeIndex: number, sessionId: string, namespace = 0): { hash: string; data: Buffer; expiry: number }[] {
    return (this.nodeStates[nodeIndex]!.rows.get(sessionId.toLowerCase()) ?? [])
      .filter((r) => r.namespace === namespace)
      .map((r) => ({ hash: r.hash, data: r.data, expiry: r.expiry }));
  }

  async close(): Promise<void> {
    this.relayAgent.destroy();
    const servers = [...this.nodeStates.map((s) => ({ server: s.server, sockets: s.sockets })), this.seed];
    await Promise.all(
      servers.map(
        ({ server, sockets }) =>
          new Promise<void>((resolve) => {
            for (const socket of sockets) socket.destroy();
            server.close(() => resolve());
          }),
      ),
    );
    rmSync(this.certDir, { recursive: true, force: true });
  }

  private now(): number {
    return Date.now() + this.clockOffsetMs;
  }

  private swarmIndexOf(sessionId: string): number {
    const moved = this.moved.get(sessionId.toLowerCase());
    if (moved !== undefined) return moved;
    const key = Buffer.from(sessionId.slice(2), 'hex');
    let space = 0n;
    for (let i = 0; i < 4; i++) space ^= key.readBigUInt64BE(i * 8);
    const ids = this.swarmIds;
    if (ids.length === 1) return 0;
    let right = ids.findIndex((id) => id >= space);
    if (right === -1) right = 0;
    const left = right === 0 ? ids.length - 1 : right - 1;
    const mask = (1n << 64n) - 1n;
    const dRight = (ids[right]! - space) & mask;
    const dLeft = (space - ids[left]!) & mask;
    return dRight < dLeft ? right : left;
  }

  private swarmJson(swarmIndex: number): { [key: string]: Json } {
    return {
      snodes: this.nodes
        .filter((n) => n.swarmIndex === swarmIndex)
        .map((n) => ({
          address: `${base32z(Buffer.from(n.legacy, 'hex'))}.snode`,
          pubkey_legacy: n.legacy,
          pubkey_x25519: n.x25519,
          pubkey_ed25519: n.ed25519,
          port: String(n.port),
          port_https: n.port,
          port_omq: n.port + 1,
          port_quic: n.port + 1,
          ip: n.ip,
        })),
      swarm: this.swarmIds[swarmIndex]!.toString(16),
    };
  }

  private misc(body: { [key: string]: Json }, now = this.now()): { [key: string]: Json } {
    return { ...body, t: now, hf: HARDFORK };
  }

  private async onSeedRequest(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req, MAX_REQUEST_BODY_SIZE).catch(() => undefined);
    let parsed: { method?: unknown; id?: unknown } | undefined;
    try {
      parsed = body ? JSON.parse(body.toString('utf8')) : undefined;
    } catch {
      parsed = undefined;
    }
    if (req.method !== 'POST' || req.url !== '/json_rpc' || !parsed || parsed.method !== 'get_n_service_nodes') {
      return send(res, { status: 200, body: { jsonrpc: '2.0', id: (parsed?.id as Json) ?? null, error: { code: -32601, message: 'Method not found' } } });
    }
    send(res, { status: 200, body: { jsonrpc: '2.0', id: (parsed.id as Json) ?? 0, result: { service_node_states: this.serviceNodeStates(), status: 'OK' } } });
  }

  private serviceNodeStates(): Json[] {
    return this.nodes.map((n) => ({
      public_ip: n.ip,
      storage_port: n.port,
      pubkey_ed25519: n.ed25519,
      pubkey_x25519: n.x25519,
      storage_server_version: VERSION,
    }));
  }

  private async onStorageRequest(state: NodeState, req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (state.down) return void req.socket.destroy();
    const relayed = req.url === RELAY_PATH && req.headers['x-fake-omq-token'] === this.relayToken;
    if (req.method === 'POST' && (req.url === '/onion_req/v2' || relayed)) return this.onOnionRequest(state, req, res);
    if (req.method !== 'POST' || req.url !== '/storage_rpc/v1') return send(res, { status: 404, body: 'Not Found\n' });
    if (req.socket.remoteFamily !== 'IPv4') return send(res, { status: 400, body: 'Bad Request\n' });
    if (this.rateLimited(state)) return send(res, { status: 429, body: 'Too Many Requests\n' });
    if (req.headers['x-loki-long-poll'] !== undefined) return send(res, { status: 410, body: 'long polling is no longer supported, client upgrade required' });
    const declared = req.headers['content-length'];
    if (declared !== undefined && !/^\d+$/.test(declared)) return send(res, { status: 400, body: 'invalid Content-Length' });
    if (Number(declared) > MAX_REQUEST_BODY_SIZE) return send(res, { status: 413, body: 'Request body too large' });
    const body = await readBody(req, MAX_REQUEST_BODY_SIZE).catch(() => undefined);
    if (!body) return send(res, { status: 413, body: 'Request body too large' });
    const answer = this.processClientRequest(state, body.toString('utf8'));
    if (this.requests.length < 100_000) this.requests.push({ node: state.info.index, method: methodOf(body), status: answer.status, via: 'direct' });
    send(res, answer);
  }

  /** `/onion_req/v2` from a client (no rate limit or IPv4 check there: https.cpp), or a relayed hop. */
  private async onOnionRequest(state: NodeState, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const declared = req.headers['content-length'];
    if (declared !== undefined && !/^\d+$/.test(declared)) return send(res, { status: 400, body: 'invalid Content-Length' });
    if (Number(declared) > MAX_REQUEST_BODY_SIZE) return send(res, { status: 413, body: 'Request body too large' });
    const body = await readBody(req, MAX_REQUEST_BODY_SIZE).catch(() => undefined);
    if (!body) return send(res, { status: 413, body: 'Request body too large' });
    const host = this.onionHost(state);
    const reply = req.url === RELAY_PATH ? await processRelayed(host, body) : await processOnionV2(host, body);
    if (res.destroyed) return;
    res.writeHead(reply.status, { 'content-type': 'text/plain', 'content-length': reply.body.byteLength, server: 'fake oxenss' });
    res.end(reply.body);
  }

  private onionHost(state: NodeState): OnionHost {
    return {
      keys: { xSecret: state.xSecretKey, xPublic: Buffer.from(state.info.x25519, 'hex') },
      knows: (ed25519) => this.nodeStates.some((s) => s.info.ed25519 === ed25519.toString('hex')),
      runRpc: (text) => {
        const answer = this.processClientRequest(state, text);
        if (this.requests.length < 100_000) this.requests.push({ node: state.info.index, method: methodOf(Buffer.from(text)), status: answer.status, via: 'onion' });
        return answer;
      },
      relay: (ed25519, bencoded) => {
        const next = this.nodeStates.find((s) => s.info.ed25519 === ed25519.toString('hex'))!;
        return this.relayTo(next, bencoded);
      },
      note: (hopNo, role) => {
        if (this.onionHops.length < 100_000) this.onionHops.push({ node: state.info.index, hopNo, role });
      },
    };
  }

  /** The OxenMQ request to the next node (30 s timeout, send_onion_to_sn); undefined without an answer. */
  private relayTo(next: NodeState, bencoded: Buffer): Promise<OnionReply | undefined> {
    return new Promise((resolve) => {
      const req = request({ host: next.info.ip, port: next.info.port, path: RELAY_PATH, method: 'POST', agent: this.relayAgent, headers: { 'content-length': bencoded.byteLength, 'x-fake-omq-token': this.relayToken }, timeout: 30_000 });
      req.on('timeout', () => req.destroy());
      req.on('error', () => resolve(undefined));
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', () => resolve(undefined));
        res.on('end', () => resolve({ status: res.statusCode ?? 500, body: Buffer.concat(chunks) }));
      });
      req.end(bencoded);
    });
  }

  private rateLimited(state: NodeState): boolean {
    if (!this.rateLimit) return false;
    const now = Date.now();
    const bucket = state.bucket;
    bucket.tokens = Math.min(600, bucket.tokens + ((now - bucket.at) * 300) / 1000);
    bucket.at = now;
    if (bucket.tokens < 1) return true;
    bucket.tokens -= 1;
    return false;
  }

  private processClientRequest(state: NodeState, text: string): Answer {
    let body: Json;
    try {
      body = JSON.parse(text) as Json;
    } catch {
      return { status: 400, body: 'invalid json' };
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) return { status: 400, body: 'invalid json: no `method` field' };
    const method = body['method'];
    if (typeof method !== 'string') return { status: 400, body: 'invalid json: no `method` field' };
    const params = body['params'];
    if (typeof params !== 'object' || params === null || Array.isArray(params)) return { status: 400, body: 'invalid json: no `params` field' };
    return this.processMethod(state, method, params);
  }

  private processMethod(state: NodeState, method: string, params: Params): Answer {
    let run: () => Answer;
    try {
      const loaded = this.load(state, method, params, true);
      if (!loaded) return { status: 400, body: `no method ${method}` };
      run = loaded;
    } catch (error) {
      if (error instanceof ParseError) return { status: 400, body: `invalid request: ${error.message}` };
      return { status: 500, body: 'request failed' };
    }
    return run();
  }

  /** Parses a request (throwing ParseError) and returns what runs it; undefined for an unknown method. */
  private load(state: NodeState, method: string, params: Params, topLevel: boolean): (() => Answer) | undefined {
    switch (method) {
      case 'store': {
        const request = loadStore(params);
        return () => this.store(state, request);
      }
      case 'retrieve': {
        const request = loadRetrieve(params);
        return () => this.retrieve(state, request);
      }
      case 'get_swarm':
      case 'get_snodes_for_pubkey': {
        const pubkey = loadGetSwarm(params);
        return () => ({ status: 200, body: this.misc(this.swarmJson(this.swarmIndexOf(pubkey.hex))) });
      }
      case 'info':
        return () => ({ status: 200, body: this.misc({ version: VERSION, timestamp: this.now() }) });
      case 'oxend_request': {
        const endpoint = stringField(params, 'endpoint');
        if (endpoint === undefined) throw new ParseError("Required field 'endpoint' missing");
        if (endpoint !== 'get_service_nodes' && endpoint !== 'ons_resolve') throw new ParseError(`Invalid oxend endpoint '${endpoint}'`);
        if (endpoint === 'ons_resolve') return () => ({ status: 400, body: 'Unknown oxend error' });
        return () => ({ status: 200, body: this.misc({ result: { service_node_states: this.serviceNodeStates(), status: 'OK' } }) });
      }
      case 'batch':
      case 'sequence': {
        if (!topLevel) throw new ParseError('Invalid batch subrequest: subrequests may not contain meta-requests');
        const requests = params['requests'];
        if (!Array.isArray(requests) || requests.length === 0) throw new ParseError('Invalid batch request: no valid "requests" field');
        if (requests.length > BATCH_REQUEST_MAX) throw new ParseError('Invalid batch request: subrequest limit exceeded');
        const runs = requests.map((sub) => {
          if (typeof sub !== 'object' || sub === null || Array.isArray(sub)) throw new ParseError('Invalid batch request: requests must be objects');
          const subMethod = sub['method'];
          const subParams = sub['params'];
          if (typeof subMethod !== 'string' || typeof subParams !== 'object' || subParams === null || Array.isArray(subParams)) {
            throw new ParseError('Invalid batch request: subrequests must have method/params keys');
          }
          const run = this.load(state, subMethod, subParams, false);
          if (!run) throw new ParseError(`Invalid batch subrequest: invalid method "${subMethod}"`);
          return run;
        });
        return () => {
          const results: Json[] = [];
          for (const run of runs) {
            const answer = run();
            results.push({ code: answer.status, body: answer.body });
            if (method === 'sequence' && (answer.status < 200 || answer.status >= 300)) break;
          }
          return { status: 200, body: { results } };
        };
      }
      default:
        return undefined;
    }
  }

  private wrongSwarm(pubkeyHex: string): Answer {
    return { status: 421, body: this.misc(this.swarmJson(this.swarmIndexOf(pubkeyHex))) };
  }

  private verify(pubkey: { netid: number; key: Buffer }, auth: { pubkeyEd25519?: Buffer; signature: Buffer }, message: string): boolean {
    let key = pubkey.key;
    if (pubkey.netid === 5 && auth.pubkeyEd25519) {
      const x = Buffer.alloc(32);
      try {
        sodium.crypto_sign_ed25519_pk_to_curve25519(x, auth.pubkeyEd25519);
      } catch {
        return false;
      }
      if (!x.equals(pubkey.key)) return false;
      key = auth.pubkeyEd25519;
    }
    return sodium.crypto_sign_verify_detached(auth.signature, Buffer.from(message), key);
  }

  private store(entry: NodeState, request: StoreRequest): Answer {
    const failing = this.failing.get(request.pubkey.hex);
    if (failing && failing.times > 0) {
      failing.times--;
      return { status: failing.status, body: failing.body };
    }
    if (this.swarmIndexOf(request.pubkey.hex) !== entry.info.swarmIndex) return this.wrongSwarm(request.pubkey.hex);
    const ttl = request.expiry - request.timestamp;
    const publicInbox = isPublicInboxNamespace(request.namespace);
    if (ttl < TTL_MINIMUM || ttl > (publicInbox ? TTL_MAXIMUM : TTL_MAXIMUM_PRIVATE)) return { status: 403, body: 'Provided expiry/TTL is not valid.' };
    const now = this.now();
    if (request.timestamp > now + STORE_TOLERANCE || request.expiry < now - STORE_TOLERANCE) return { status: 406, body: 'Timestamp error: check your clock' };
    if (!publicInbox) {
      if (!request.auth) return { status: 401, body: `store: signature required to store to namespace ${request.namespace}` };
      if (request.auth.sigTimestamp < now - SIGNATURE_TOLERANCE || request.auth.sigTimestamp > now + SIGNATURE_TOLERANCE) {
        return { status: 406, body: 'store signature timestamp too far from current time' };
      }
      const ns = request.namespace === 0 ? '' : String(request.namespace);
      if (!this.verify(request.pubkey, request.auth, `store${ns}${request.auth.sigTimestamp}`)) return { status: 401, body: 'store signature verification failed' };
    }
    const swarm: { [key: string]: Json } = {};
    let anyStored = false;
    for (const state of this.nodeStates.filter((s) => s.info.swarmIndex === entry.info.swarmIndex)) {
      if (state !== entry && (state.down || state.paused)) {
        if (state.paused) state.held.push(request);
        swarm[state.info.ed25519] = { failed: true, timeout: true };
        continue;
      }
      const { hash, already, expiry } = this.storeLocally(state, request);
      const signature = Buffer.alloc(64);
      sodium.crypto_sign_detached(signature, Buffer.from(hash), state.edSecretKey);
      swarm[state.info.ed25519] = {
        hash,
        signature: signature.toString('base64'),
        ...(already ? { already: true } : {}),
        expiry,
        ...(state === entry ? { t: now } : {}),
      };
      anyStored = true;
    }
    const hash = messageHashOf(request.pubkey, request.namespace, request.data);
    return { status: anyStored ? 200 : 500, body: this.misc({ swarm, hash }, now) };
  }

  private storeLocally(state: NodeState, request: StoreRequest): { hash: string; already: boolean; expiry: number } {
    const hash = messageHashOf(request.pubkey, request.namespace, request.data);
    const key = request.pubkey.hex;
    let rows = state.rows.get(key);
    if (!rows) state.rows.set(key, (rows = []));
    if (isPublicOutboxNamespace(request.namespace)) {
      const kept = rows.filter((r) => r.namespace !== request.namespace || r.hash === hash);
      rows.splice(0, rows.length, ...kept);
    }
    const existing = rows.find((r) => r.hash === hash);
    if (existing) {
      if (existing.expiry < request.expiry) existing.expiry = request.expiry;
      return { hash, already: true, expiry: existing.expiry };
    }
    this.insert(state, key, { hash, namespace: request.namespace, timestamp: request.timestamp, expiry: request.expiry, data: request.data });
    return { hash, already: false, expiry: request.expiry };
  }

  private insert(state: NodeState, key: string, row: Omit<Row, 'id'>): void {
    let rows = state.rows.get(key);
    if (!rows) state.rows.set(key, (rows = []));
    if (rows.some((r) => r.hash === row.hash)) return;
    rows.push({ ...row, id: state.nextId++ });
  }

  private retrieve(state: NodeState, request: RetrieveRequest): Answer {
    if (this.swarmIndexOf(request.pubkey.hex) !== state.info.swarmIndex) return this.wrongSwarm(request.pubkey.hex);
    const now = this.now();
    if (!isNoAuthRetrieveNamespace(request.namespace) && !request.auth) return { status: 401, body: 'retrieve: request signature required' };
    if (request.auth) {
      if (request.auth.timestamp < now - SIGNATURE_TOLERANCE || request.auth.timestamp > now + SIGNATURE_TOLERANCE) {
        return { status: 406, body: 'retrieve timestamp too far from current time' };
      }
      const ns = request.namespace === 0 ? '' : String(request.namespace);
      if (!this.verify(request.pubkey, request.auth, `retrieve${ns}${request.auth.timestamp}`)) return { status: 401, body: 'retrieve signature verification failed' };
    }
    let maxCount = request.maxCount === 0 ? undefined : request.maxCount;
    let maxSize = request.maxSize === 0 ? undefined : request.maxSize;
    if (maxCount === undefined && maxSize === undefined) maxSize = -5;
    if (maxSize !== undefined && maxSize < 0) maxSize = Math.floor(RETRIEVE_MAX_SIZE / -maxSize);
    else if (maxSize === undefined || maxSize > RETRIEVE_MAX_SIZE) maxSize = RETRIEVE_MAX_SIZE;
    if (maxCount !== undefined && maxCount < 1) maxCount = 1;
    const all = (state.rows.get(request.pubkey.hex) ?? []).filter((r) => r.namespace === request.namespace && r.expiry > now);
    const lastIndex = request.lastHash === undefined ? -1 : all.findIndex((r) => r.hash === request.lastHash);
    const candidates = lastIndex === -1 ? all : all.slice(lastIndex + 1);
    const messages: Json[] = [];
    let more = false;
    let size = 0;
    for (const row of candidates) {
      if (maxCount !== undefined && messages.length >= maxCount) {
        more = true;
        break;
      }
      size += row.hash.length + Math.floor((row.data.byteLength * 4) / 3);
      if (messages.length > 0 && size > maxSize) {
        more = true;
        break;
      }
      messages.push({ hash: row.hash, timestamp: row.timestamp, expiration: row.expiry, data: row.data.toString('base64') });
    }
    return { status: 200, body: this.misc({ messages, more }, now) };
  }
}

function randomHex(bytes: number): string {
  const buf = Buffer.alloc(bytes);
  sodium.randombytes_buf(buf);
  return buf.toString('hex');
}

function messageHashOf(pubkey: { netid: number; key: Buffer }, namespace: number, data: Buffer): string {
  const hash = Buffer.alloc(32);
  sodium.crypto_generichash(hash, Buffer.concat([Buffer.from([pubkey.netid]), pubkey.key, Buffer.from(namespace === 0 ? '' : String(namespace)), data]));
  return hash.toString('base64').replace(/=+$/, '');
}

function selfSignedCertificate(dir: string, name: string): { key: string; cert: string } {
  const keyFile = join(dir, `${name}.key`);
  const certFile = join(dir, `${name}.crt`);
  try {
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ed25519', '-nodes', '-keyout', keyFile, '-out', certFile, '-subj', `/CN=${name}`, '-days', '2', '-addext', 'subjectAltName=IP:127.0.0.1'],
      { stdio: 'pipe' },
    );
  } catch (error) {
    throw new Error(`the fake Session swarm needs openssl to make its certificates: ${(error as Error).message}`);
  }
  return { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8') };
}

function trackSockets(server: Server, sockets: Set<Socket>): void {
  server.on('secureConnection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
}

function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > max) {
        req.destroy();
        reject(new Error('too large'));
      } else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });
}

function send(res: ServerResponse, answer: Answer): void {
  const isJson = typeof answer.body !== 'string';
  const text = isJson ? JSON.stringify(answer.body) : (answer.body as string);
  res.writeHead(answer.status, { 'content-type': isJson ? 'application/json' : 'text/plain', 'content-length': Buffer.byteLength(text), server: 'fake oxenss' });
  res.end(text);
}

function methodOf(body: Buffer): string {
  try {
    const method = (JSON.parse(body.toString('utf8')) as { method?: unknown }).method;
    return typeof method === 'string' ? method : '?';
  } catch {
    return '?';
  }
}

const BASE32Z = 'ybndrfg8ejkmcpqxot1uwisza345h769';

function base32z(bytes: Buffer): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const byte of bytes) {
    value = (value << 8) | byte;
    bits += 8;
    while (bits >= 5) {
      out += BASE32Z[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  if (bits > 0) out += BASE32Z[(value << (5 - bits)) & 31];
  return out;
}
