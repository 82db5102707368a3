import { z } from 'zod';
import type { SessionIdentity } from './identity.ts';
import { isSessionId } from './identity.ts';
import sodium from 'sodium-native';
import { SnodeHttp, SnodeUnreachableError } from './snode-http.ts';
import { messageHash } from './message-crypto.ts';
import { SESSION_SEED_CERTIFICATES } from './seed-certificates.ts';
import { NodePool, NoPoolError } from './node-pool.ts';
import { pickRandom, swarmFrom, type AddressPolicy, type Snode } from './snode-pool.ts';
import type { HttpAnswer, SnodeTransport } from './snode-transport.ts';
import {
  MAX_MESSAGE_BYTES,
  SessionNetworkError,
  SessionRefusedError,
  TTL_MAX_MS,
  TTL_MIN_MS,
  type PollResult,
  type RetrievedMessage,
  type SessionStorageOptions,
  type StorageHealth,
} from './storage-api.ts';
import { OnionTransport } from './onion/onion-transport.ts';

export * from './storage-api.ts';

const MAX_SWARM_SIZE = 64;
const NODE_FAILURES_BEFORE_DROP = 3;
/** `last_hash` entries kept (one per identity, namespace and node polled); the oldest go first. */
const MAX_LAST_HASHES = 20_000;

const retrievedMessage = z.object({
  hash: z.string().regex(/^[A-Za-z0-9+/]{43}$/),
  timestamp: z.number().int().nonnegative(),
  expiration: z.number().int().nonnegative(),
  data: z.string().max(Math.ceil(MAX_MESSAGE_BYTES / 3) * 4),
});
const retrieveAnswer = z.object({ messages: z.array(z.unknown()), more: z.boolean().optional() });
const storeAnswer = z.object({ hash: z.string().optional(), swarm: z.record(z.string(), z.unknown()).optional() });

type Attempt<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly retry: 'other-node' | 'same-node'; readonly status?: number };

/**
 * Relay's client of Session's storage servers, spoken to through onion paths (or, as an explicit
 * opt-out, directly over HTTPS, which shows the nodes the bot's IP address). It keeps the
 * service-node pool (node-pool.ts), each Session ID's swarm (from `get_swarm`, replaced by a 421
 * answer), the network clock offset (from the `t` every answer carries), `last_hash` per node and
 * namespace, and the hashes already handed on (messages come again whenever a node does not know
 * the `last_hash` it is given). Facts: ../shared/notes/session-protocol.md §3–§6.
 */
export class SessionStorageClient {
  private readonly http: SnodeHttp;
  private readonly transport: SnodeTransport;
  private readonly now: () => number;
  private readonly pool: NodePool;
  private readonly swarmCacheMs: number;
  private readonly maxAttempts: number;
  private readonly maxSeenHashes: number;
  private readonly addresses: AddressPolicy;
  private readonly swarms = new Map<string, { nodes: Snode[]; fetchedAt: number }>();
  private readonly failures = new Map<string, number>();
  private readonly lastHashes = new Map<string, string>();
  /** Hash → expiration (ms) of every message handed on, oldest first. */
  private readonly seen = new Map<string, number>();
  private offsetMs = 0;
  private lastSuccessAt: number | undefined;
  private lastError: string | undefined;

  constructor(private readonly options: SessionStorageOptions) {
    if (options.seedNodes.length === 0) throw new Error('at least one Session seed node is needed');
    this.http = new SnodeHttp({
      timeoutMs: options.requestTimeoutMs ?? 10_000,
      maxResponseBytes: options.maxResponseBytes ?? 4 * 1024 * 1024,
      seedCa: typeof options.seedCa === 'string' || Buffer.isBuffer(options.seedCa) ? options.seedCa : [...(options.seedCa ?? SESSION_SEED_CERTIFICATES)].join('\n'),
    });
    this.addresses = { allowPrivate: options.allowPrivateAddresses === true };
    this.now = options.now ?? Date.now;
    this.pool = new NodePool({
      seedNodes: options.seedNodes,
      http: this.http,
      ask: (node, method, params) => this.call(node, method, params),
      addresses: this.addresses,
      maxSize: options.maxPoolSize ?? 4_096,
      minSize: options.minPoolSize ?? 12,
      refreshMs: options.poolRefreshMs ?? 2 * 3_600_000,
      minAgreement: options.minAgreement ?? 24,
      now: this.now,
      onSuccess: () => (this.lastSuccessAt = this.now()),
      onProblem: (reason) => (this.lastError = reason),
    });
    const pool = () => this.pool.nodes();
    const transport = options.transport ?? 'onion';
    if (transport === 'direct') this.transport = this.http;
    else if (transport === 'onion') this.transport = new OnionTransport({ pool, timeoutMs: options.requestTimeoutMs ?? 10_000, ...(options.maxResponseBytes !== undefined ? { maxResponseBytes: options.maxResponseBytes } : {}) });
    else this.transport = transport(pool);
    this.swarmCacheMs = options.swarmCacheMs ?? 3_600_000;
    this.maxAttempts = options.maxAttempts ?? 5;
    this.maxSeenHashes = options.maxSeenHashes ?? 100_000;
  }

  /** The network's time (ms): local time corrected by the offset the nodes' answers showed. */
  networkNow(): number {
    return Math.round(this.now() - this.offsetMs);
  }

  clockOffsetMs(): number {
    return this.offsetMs;
  }

  health(): StorageHealth {
    const transport = this.pool.size() > 0 ? this.transport.health?.() : undefined;
    return {
      ...(transport && !transport.ready ? { transportProblem: transport.reason ?? 'the transport cannot carry a call' } : {}),
      poolSize: this.pool.size(),
      clockOffsetMs: this.offsetMs,
      ...(this.lastSuccessAt !== undefined ? { lastSuccessAt: this.lastSuccessAt } : {}),
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
    };
  }

  close(): void {
    if (this.transport !== this.http) this.transport.close();
    this.http.close();
  }

  /** The swarm of a Session ID: cached, else asked of a random pool node. */
  async swarmOf(sessionId: string): Promise<Snode[]> {
    const cached = this.swarms.get(sessionId);
    if (cached && this.now() - cached.fetchedAt < this.swarmCacheMs && cached.nodes.length > 0) return cached.nodes;
    await this.ensurePool();
    const tried = new Set<string>();
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      const node = pickRandom(this.pool.nodes().filter((n) => !tried.has(n.ed25519)));
      if (!node) break;
      tried.add(node.ed25519);
      const answer = await this.call(node, 'get_swarm', { pubkey: sessionId });
      if (!answer) continue;
      if (answer.status === 200) {
        const nodes = this.pool.known(swarmFrom(answer.body, MAX_SWARM_SIZE, this.addresses));
        if (nodes) {
          this.swarms.set(sessionId, { nodes, fetchedAt: this.now() });
          return nodes;
        }
      }
      this.nodeFailed(node, `get_swarm answered ${answer.status}`);
    }
    throw this.networkError(`no node gave the swarm of ${sessionId.slice(0, 8)}…`);
  }

  /**
   * Stores `data` in the recipient's namespace 0 (a public inbox: no signature), with the network
   * time and `ttlMs`. Resolves with the message hash once one node of the swarm accepted it.
   */
  async store(recipient: string, data: Buffer, options: { readonly ttlMs?: number; readonly timestamp?: number } = {}): Promise<{ hash: string; timestamp: number }> {
    const ttlMs = options.ttlMs ?? TTL_MAX_MS;
    if (!isSessionId(recipient)) throw new SessionRefusedError(400, 'the recipient is not a Session ID');
    if (ttlMs < TTL_MIN_MS || ttlMs > TTL_MAX_MS) throw new SessionRefusedError(403, `a TTL must be between ${TTL_MIN_MS} and ${TTL_MAX_MS} ms`);
    if (data.byteLength > MAX_MESSAGE_BYTES) throw new SessionRefusedError(400, `a message is at most ${MAX_MESSAGE_BYTES} bytes`);
    const encoded = data.toString('base64');
    let timestamp = 0;
    // Without a fixed timestamp each attempt takes the network time then (a 406 corrects the offset).
    const params = () => {
      timestamp = options.timestamp ?? this.networkNow();
      return { pubkey: recipient, namespace: 0, timestamp, ttl: ttlMs, data: encoded };
    };
    return this.onSwarm(recipient, 'store', params, (answer) => {
      const parsed = storeAnswer.safeParse(answer.body);
      const hash = parsed.success ? parsed.data.hash ?? firstSwarmHash(parsed.data.swarm) : undefined;
      if (!hash) throw new SessionRefusedError(answer.status, 'the store answer names no hash');
      return { hash, timestamp };
    });
  }

  /** One signed `retrieve` from one node of the identity's swarm, after that node's `last_hash`. */
  async retrieve(identity: SessionIdentity, namespace = 0): Promise<{ node: string; messages: RetrievedMessage[]; malformed: number; more: boolean }> {
    return this.onSwarm(
      identity.sessionId,
      'retrieve',
      (node) => this.retrieveParams(identity, namespace, node),
      (answer, node) => {
        const parsed = retrieveAnswer.safeParse(answer.body);
        if (!parsed.success) throw new SessionRefusedError(answer.status, 'the retrieve answer is malformed');
        const messages: RetrievedMessage[] = [];
        let malformed = 0;
        for (const entry of parsed.data.messages) {
          const message = retrievedMessage.safeParse(entry);
          if (!message.success) {
            malformed++;
            continue;
          }
          const data = Buffer.from(message.data.data, 'base64');
          // The hash is the server's function of the data (request_handler.cpp computeMessageHash): a
          // node that names another one (to replay a message under a new id, or hide one) is not believed.
          if (messageHash(identity.sessionId, namespace, data) !== message.data.hash) {
            malformed++;
            continue;
          }
          messages.push({ hash: message.data.hash, timestamp: message.data.timestamp, expiration: message.data.expiration, data });
        }
        return { node: node.ed25519, messages, malformed, more: parsed.data.more === true };
      },
    );
  }

  /**
   * Retrieves from one node and hands each message not handed on before to `handle`, in the
   * node's order. A message counts as handed on once `handle` resolved; the node's `last_hash`
   * moves only past such messages, so one `handle` rejected comes again on the next poll.
   */
  async poll(identity: SessionIdentity, handle: (message: RetrievedMessage) => Promise<void>, namespace = 0): Promise<PollResult> {
    const { node, messages, malformed, more } = await this.retrieve(identity, namespace);
    const key = lastHashKey(identity.sessionId, namespace, node);
    let handled = 0;
    let duplicates = 0;
    for (const message of messages) {
      if (this.seen.has(message.hash)) duplicates++;
      else {
        await handle(message);
        this.remember(message.hash, message.expiration);
        handled++;
      }
      this.lastHashes.delete(key);
      this.lastHashes.set(key, message.hash);
    }
    while (this.lastHashes.size > MAX_LAST_HASHES) this.lastHashes.delete(this.lastHashes.keys().next().value!);
    return { node, handled, duplicates, malformed, more };
  }

  /** Whether a hash was handed on (for tests and for a caller's own bookkeeping). */
  wasHandled(hash: string): boolean {
    return this.seen.has(hash);
  }

  /** The `last_hash` kept for one node of a swarm (for tests). */
  lastHashOf(sessionId: string, namespace: number, nodeEd25519: string): string | undefined {
    return this.lastHashes.get(lastHashKey(sessionId, namespace, nodeEd25519));
  }

  /** Asks a node for its time (`info`) and sets the clock offset from it. */
  async syncClock(node?: Snode): Promise<void> {
    await this.ensurePool();
    const target = node ?? pickRandom(this.pool.nodes());
    if (!target) throw this.networkError('no service node to ask the time');
    const answer = await this.call(target, 'info', {});
    if (!answer || answer.status !== 200) throw this.networkError('the clock could not be read from the network');
  }

  private retrieveParams(identity: SessionIdentity, namespace: number, node: Snode): object {
    const timestamp = this.networkNow();
    const signature = Buffer.alloc(64);
    sodium.crypto_sign_detached(signature, Buffer.from(`retrieve${namespace === 0 ? '' : namespace}${timestamp}`), identity.edSecretKey);
    return {
      pubkey: identity.sessionId,
      namespace,
      last_hash: this.lastHashes.get(lastHashKey(identity.sessionId, namespace, node.ed25519)) ?? '',
      timestamp,
      signature: signature.toString('base64'),
      pubkey_ed25519: identity.edPublicKey.toString('hex'),
    };
  }

  /**
   * Runs a call on the nodes of a swarm until one answers 200: a 421 replaces the swarm and tries a
   * node of the new one; a 406 resynchronises the clock and tries the same node again once; an
   * unreachable or failing node is counted and another one tried. 400, 401, 403 and 413 are the
   * request's fault and end the call.
   */
  private async onSwarm<T>(sessionId: string, method: string, params: (node: Snode) => object, accept: (answer: HttpAnswer, node: Snode) => T): Promise<T> {
    const tried = new Set<string>();
    let clockRetried = false;
    let node: Snode | undefined;
    let lastStatus: number | undefined;
    for (let attempt = 0; attempt < this.maxAttempts; attempt++) {
      if (!node) {
        const swarm = await this.swarmOf(sessionId);
        node = pickRandom(swarm.filter((n) => !tried.has(n.ed25519))) ?? pickRandom(swarm);
      }
      if (!node) break;
      tried.add(node.ed25519);
      const result = await this.attempt(sessionId, method, node, params(node), accept, clockRetried);
      if (result.ok) return result.value;
      if (result.status !== undefined) lastStatus = result.status;
      if (result.retry === 'same-node') clockRetried = true;
      else node = undefined;
    }
    const why = lastStatus !== undefined ? `last answer ${lastStatus}` : `last: ${this.lastError ?? 'no answer'}`;
    throw this.networkError(`${method} failed on ${tried.size} node(s) of the swarm of ${sessionId.slice(0, 8)}… (${why})`, lastStatus);
  }

  private async attempt<T>(sessionId: string, method: string, node: Snode, params: object, accept: (answer: HttpAnswer, node: Snode) => T, clockRetried: boolean): Promise<Attempt<T>> {
    const answer = await this.call(node, method, params);
    if (!answer) return { ok: false, retry: 'other-node' };
    switch (answer.status) {
      case 200:
        return { ok: true, value: accept(answer, node) };
      case 421: {
        const moved = this.pool.known(swarmFrom(answer.body, MAX_SWARM_SIZE, this.addresses));
        if (moved) this.swarms.set(sessionId, { nodes: moved, fetchedAt: this.now() });
        else this.swarms.delete(sessionId);
        return { ok: false, retry: 'other-node' };
      }
      case 406:
        if (clockRetried) throw new SessionRefusedError(406, `${method}: ${textOf(answer.body)} (the clock offset did not help)`);
        await this.call(node, 'info', {});
        return { ok: false, retry: 'same-node' };
      case 400:
      case 401:
      case 403:
      case 413:
        throw new SessionRefusedError(answer.status, `${method}: ${textOf(answer.body)}`);
      default:
        this.nodeFailed(node, `${method} answered ${answer.status}`);
        return { ok: false, retry: 'other-node', status: answer.status };
    }
  }

  /** One request; undefined when the node could not be reached (it is counted as failing). */
  private async call(node: Snode, method: string, params: object): Promise<HttpAnswer | undefined> {
    const sentAt = this.now();
    try {
      const answer = await this.transport.storageRpc(node, method, params);
      this.noteTime(answer.body, sentAt);
      if (answer.status < 500) {
        this.failures.delete(node.ed25519);
        this.lastSuccessAt = this.now();
      }
      return answer;
    } catch (error) {
      if (!(error instanceof SnodeUnreachableError)) throw error;
      this.nodeFailed(node, error.message);
      return undefined;
    }
  }

  /** The offset from a node's `t` (or `info`'s `timestamp`), against the middle of the round trip. */
  private noteTime(body: unknown, sentAt: number): void {
    if (typeof body !== 'object' || body === null) return;
    const record = body as { t?: unknown; timestamp?: unknown };
    const t = typeof record.t === 'number' ? record.t : typeof record.timestamp === 'number' && !('messages' in record) ? record.timestamp : undefined;
    if (t === undefined || !Number.isSafeInteger(t) || t < 1_000_000_000_000) return;
    this.offsetMs = Math.round((sentAt + this.now()) / 2 - t);
  }

  private nodeFailed(node: Snode, reason: string): void {
    this.lastError = reason;
    const count = (this.failures.get(node.ed25519) ?? 0) + 1;
    if (count < NODE_FAILURES_BEFORE_DROP) {
      this.failures.set(node.ed25519, count);
      return;
    }
    this.failures.delete(node.ed25519);
    this.pool.drop(node.ed25519);
    for (const [id, swarm] of this.swarms) {
      const nodes = swarm.nodes.filter((n) => n.ed25519 !== node.ed25519);
      if (nodes.length === 0) this.swarms.delete(id);
      else this.swarms.set(id, { nodes, fetchedAt: swarm.fetchedAt });
    }
  }

  /** The pool, fetched or refreshed first when it is too small or stale; a failure is a network error. */
  private async ensurePool(): Promise<void> {
    try {
      await this.pool.ensure();
    } catch (error) {
      if (error instanceof NoPoolError) throw this.networkError(error.message);
      throw error;
    }
  }

  private remember(hash: string, expiration: number): void {
    this.seen.delete(hash);
    this.seen.set(hash, expiration);
    if (this.seen.size <= this.maxSeenHashes) return;
    const now = this.networkNow();
    for (const [h, expires] of this.seen) if (expires < now) this.seen.delete(h);
    while (this.seen.size > this.maxSeenHashes) this.seen.delete(this.seen.keys().next().value!);
  }

  private networkError(message: string, lastStatus?: number): SessionNetworkError {
    this.lastError = message;
    return new SessionNetworkError(message, lastStatus);
  }
}

function lastHashKey(sessionId: string, namespace: number, node: string): string {
  return `${sessionId}\u0000${namespace}\u0000${node}`;
}

function firstSwarmHash(swarm: Record<string, unknown> | undefined): string | undefined {
  for (const entry of Object.values(swarm ?? {})) {
    const hash = (entry as { hash?: unknown } | null)?.hash;
    if (typeof hash === 'string') return hash;
  }
  return undefined;
}

function textOf(body: unknown): string {
  return (typeof body === 'string' ? body : JSON.stringify(body) ?? '').slice(0, 200).trim();
}
