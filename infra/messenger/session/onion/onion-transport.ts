import { SnodeHttp, SnodeUnreachableError, type RawHttpAnswer } from '../snode-http.ts';
import type { HttpAnswer } from '../snode-transport.ts';
import type { Snode } from '../snode-pool.ts';
import type { SnodeTransport } from '../snode-transport.ts';
import { buildOnion, canSealFor, openAesGcm, openOnionAnswer, OnionAnswerError, type BuiltOnion } from './onion-layers.ts';
import { NoOnionPathError, OnionPaths, type OnionPath, type OnionPathsOptions } from './onion-paths.ts';

/**
 * Storage RPC calls through three-hop onion paths, as Session's apps send every request: the guard
 * sees this machine's address but not the call, the destination sees the call but not the address,
 * and no node between can read or change it (each layer is sealed for one node; the answer is
 * sealed for this client). TLS to the guard is not verified (storage servers have self-signed
 * certificates): the onion layers are the protection, not TLS.
 *
 * A call takes a path without its destination and POSTs the onion to the guard's /onion_req/v2
 * (session-storage-server oxenss/server/https.cpp). What comes back (request_handler.cpp
 * `process_onion_req` and the relays' `on_response`):
 *
 * - 200 with base64 that opens with the destination layer's key: the destination's `{status, body}`
 *   (any status: 421, 406, … are the destination's, handed to the storage client as they are);
 * - 502 `Next node not found: <ed25519>`: a node (of the path, or the destination) the network does
 *   not know; a path node is replaced at once, an unknown destination fails the call;
 * - anything else (504 `Request time out` when a hop did not answer, 400 `Invalid ciphertext`, 503,
 *   no HTTP answer from the guard, a 200 that does not open), or no answer within the time bound:
 *   the path failed; it counts a failure (dropped at the third, session-desktop onions.ts
 *   `processAnyOtherErrorOnPath` → `incrementBadPathCountOrDrop`) and the call tries another path.
 *
 * When every path tried fails, the call rejects with SnodeUnreachableError (the destination gave no
 * answer), as SnodeHttp does for a node that cannot be reached.
 */
export interface OnionTransportOptions extends Omit<OnionPathsOptions, 'pool'> {
  /** The client's service-node pool (SessionStorageClient hands its reader to the transport factory). */
  readonly pool: () => readonly Snode[];
  /** Bound on one onion round trip (all hops there and back). */
  readonly timeoutMs?: number;
  readonly maxResponseBytes?: number;
  /** Paths tried for one call before it fails. */
  readonly pathAttempts?: number;
}

export const DEFAULT_ONION_TIMEOUT_MS = 20_000;
const DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024;
const DEFAULT_PATH_ATTEMPTS = 3;
const NEXT_NODE_NOT_FOUND = 'Next node not found: ';

type Outcome =
  | { readonly kind: 'answer'; readonly answer: HttpAnswer }
  | { readonly kind: 'path-failed'; readonly reason: string; readonly timedOut?: true }
  | { readonly kind: 'unknown-node'; readonly ed25519: string };

export class OnionTransport implements SnodeTransport {
  private readonly http: SnodeHttp;
  private readonly paths: OnionPaths;
  private readonly pathAttempts: number;
  private lastFailure: string | undefined;

  constructor(private readonly options: OnionTransportOptions) {
    this.http = new SnodeHttp({ timeoutMs: options.timeoutMs ?? DEFAULT_ONION_TIMEOUT_MS, maxResponseBytes: options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES });
    this.paths = new OnionPaths(options);
    this.pathAttempts = Math.max(1, options.pathAttempts ?? DEFAULT_PATH_ATTEMPTS);
  }

  async storageRpc(node: Snode, method: string, params: object): Promise<HttpAnswer> {
    const target = short(node);
    const x25519 = node.x25519 ?? this.options.pool().find((n) => n.ed25519 === node.ed25519)?.x25519;
    if (!x25519) throw new SnodeUnreachableError(`${target}: no X25519 key to seal an onion request for it`);
    const body = Buffer.from(JSON.stringify({ method, params }), 'utf8');
    const avoid = new Set<string>();
    const reasons: string[] = [];
    let timedOut = false;
    for (let attempt = 0; attempt < this.pathAttempts; attempt++) {
      let path: OnionPath;
      try {
        path = this.paths.pick(node.ed25519, avoid);
      } catch (error) {
        if (!(error instanceof NoOnionPathError)) throw error;
        reasons.push(`no onion path can be built: ${error.message}`);
        break;
      }
      let onion: BuiltOnion;
      try {
        onion = buildOnion(path.nodes.map(hopOf), { ed25519: node.ed25519, x25519 }, body);
      } catch (error) {
        // A key from the network that X25519 refuses: the destination cannot be reached this way,
        // a path node is left out like a node the network does not know.
        if (!canSealFor(x25519)) throw new SnodeUnreachableError(`${target}: its X25519 key cannot be sealed for (${(error as Error).message})`);
        const bad = path.nodes.find((n) => !canSealFor(n.x25519!));
        if (!bad) throw error;
        this.paths.unknownNode(bad.ed25519);
        reasons.push(`path node ${short(bad)} has an X25519 key that cannot be sealed for: left out`);
        continue;
      }
      const outcome = await this.send(path, onion);
      if (outcome.kind === 'answer') {
        this.paths.succeeded(path);
        this.lastFailure = undefined;
        return outcome.answer;
      }
      if (outcome.kind === 'unknown-node') {
        if (outcome.ed25519 === node.ed25519) throw new SnodeUnreachableError(`${target}: the network does not know this node (${NEXT_NODE_NOT_FOUND.trim()})`);
        if (this.paths.unknownNode(outcome.ed25519)) {
          reasons.push(`path node ${outcome.ed25519.slice(0, 8)}… is unknown to the network: replaced`);
          continue;
        }
        reasons.push(`${NEXT_NODE_NOT_FOUND}${outcome.ed25519.slice(0, 8)}… (in no path)`);
      } else {
        reasons.push(outcome.reason);
        // A hop that did not answer, on two paths with nothing in common but the destination: the
        // destination is what is down. The second path is not blamed, and no third one is spent.
        if (outcome.timedOut && timedOut) break;
        if (outcome.timedOut) timedOut = true;
      }
      this.paths.failed(path);
      for (const n of path.nodes) avoid.add(n.ed25519);
    }
    this.lastFailure = reasons.join('; ');
    throw new SnodeUnreachableError(`${target}: no answer through an onion path (${this.lastFailure})`);
  }

  /**
   * Ready when a path can be built from the pool and not every kept path failed its last call.
   * The reason names what is missing.
   */
  health(): { readonly ready: boolean; readonly reason?: string } {
    try {
      this.paths.ensure();
    } catch (error) {
      if (!(error instanceof NoOnionPathError)) throw error;
      return { ready: false, reason: `no onion path can be built: ${error.message}` };
    }
    if (this.paths.allFailing()) return { ready: false, reason: `no onion path can be built: every path attempt failed (${this.lastFailure ?? 'no answer'})` };
    return { ready: true };
  }

  /** The kept paths, guard first (for tests and diagnostics). */
  currentPaths(): Snode[][] {
    return this.paths.current();
  }

  close(): void {
    this.http.close();
  }

  private async send(path: OnionPath, onion: BuiltOnion): Promise<Outcome> {
    const guard = path.nodes[0]!;
    let raw: RawHttpAnswer;
    try {
      raw = await this.http.onionRequest(guard, onion.payload);
    } catch (error) {
      if (!(error instanceof SnodeUnreachableError)) throw error;
      return { kind: 'path-failed', reason: `guard ${short(guard)}: ${error.message}` };
    }
    if (raw.status === 200) {
      try {
        return { kind: 'answer', answer: openOnionAnswer(raw.body, onion.answerKey) };
      } catch (error) {
        if (!(error instanceof OnionAnswerError)) throw error;
        return { kind: 'path-failed', reason: `${whoSealed(raw.body, onion, path) ?? 'the path'}: ${error.message}` };
      }
    }
    const text = raw.body.toString('utf8').slice(0, 300).trim();
    if (raw.status === 502 && text.startsWith(NEXT_NODE_NOT_FOUND)) {
      const ed25519 = text.slice(NEXT_NODE_NOT_FOUND.length).trim().toLowerCase();
      if (/^[0-9a-f]{64}$/.test(ed25519)) return { kind: 'unknown-node', ed25519 };
    }
    return { kind: 'path-failed', reason: `path via ${short(guard)} answered ${raw.status}${text ? `: ${text.slice(0, 120)}` : ''}`, ...(raw.status === 504 ? { timedOut: true as const } : {}) };
  }
}

/** A path node refusing its own layer seals its refusal ("Invalid json") with that layer's key: name it. */
function whoSealed(body: Buffer, onion: BuiltOnion, path: OnionPath): string | undefined {
  const sealed = Buffer.from(body.toString('latin1').trim(), 'base64');
  for (let i = 0; i < onion.layerKeys.length - 1; i++) {
    try {
      const opened = openAesGcm(onion.layerKeys[i]!, sealed).toString('utf8').slice(0, 120);
      return `path node ${i} (${short(path.nodes[i]!)}) refused its layer: ${opened}`;
    } catch {
      // not this layer's key
    }
  }
  return undefined;
}

function hopOf(node: Snode): { ed25519: string; x25519: string } {
  return { ed25519: node.ed25519, x25519: node.x25519! };
}

function short(node: Snode): string {
  return `${node.ip}:${node.port} (${node.ed25519.slice(0, 8)}…)`;
}
