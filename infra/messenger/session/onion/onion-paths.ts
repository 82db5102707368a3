import { randomInt } from 'node:crypto';
import { shuffled, type Snode } from '../snode-pool.ts';

/**
 * The onion paths a client keeps, built from its service-node pool as Session's apps build them
 * (session-desktop ts/session/onions/onionPath.ts and onionPathConstants.ts; facts only, no code):
 *
 * - a path is ONION_REQUEST_HOPS = 3 nodes, the first its guard (the only node that sees this
 *   machine's address); the destination is a fourth node, never one of the path's;
 * - two paths are kept (desiredGuardCount = 2, each with its own guard), made of distinct nodes;
 *   one is enough to work with (minimumGuardCount = 1);
 * - a call uses a random kept path that does not hold its destination;
 * - a path that fails counts a failure; at 3 (pathFailureThreshold) it is dropped with its guard and
 *   a new one is built; its nodes are not used again for a while (desktop drops them from its pool);
 * - a node the network says it does not know ("Next node not found") is replaced in its path at
 *   once, by a random node not in that path (dropSnodeFromPath).
 *
 * Unlike the desktop app, candidate guards are not tested with a direct /storage_rpc/v1 call (that
 * would be a request outside any onion); a guard that does not answer fails its path instead. A
 * path that carries a call again has its failure count cleared.
 */
export const ONION_REQUEST_HOPS = 3;
export const DESIRED_PATHS = 2;
export const PATH_FAILURES_BEFORE_DROP = 3;
/** How long the nodes of a dropped path (or a node the network does not know) are left out. */
export const REST_MS = 30 * 60_000;

export interface OnionPathsOptions {
  readonly pool: () => readonly Snode[];
  readonly hops?: number;
  readonly desiredPaths?: number;
  readonly failuresBeforeDrop?: number;
  readonly restMs?: number;
  readonly now?: () => number;
}

/** A path: its nodes (guard first), as used for one call. */
export interface OnionPath {
  readonly nodes: readonly Snode[];
  /** False for a path made for one call only (when every kept path holds the destination). */
  readonly kept: boolean;
  failures: number;
}

/** No path can be built from the pool now. */
export class NoOnionPathError extends Error {
  override readonly name = 'NoOnionPathError';
}

export class OnionPaths {
  private paths: OnionPath[] = [];
  /** Ed25519 → until when (ms) the node is left out of new paths. */
  private readonly resting = new Map<string, number>();
  private readonly hops: number;
  private readonly desired: number;
  private readonly failuresBeforeDrop: number;
  private readonly restMs: number;
  private readonly now: () => number;

  constructor(private readonly options: OnionPathsOptions) {
    this.hops = options.hops ?? ONION_REQUEST_HOPS;
    this.desired = options.desiredPaths ?? DESIRED_PATHS;
    this.failuresBeforeDrop = options.failuresBeforeDrop ?? PATH_FAILURES_BEFORE_DROP;
    this.restMs = options.restMs ?? REST_MS;
    this.now = options.now ?? Date.now;
    if (this.hops < 1 || this.desired < 1 || this.failuresBeforeDrop < 1) throw new Error('onion paths need at least one hop, one path and one failure before a drop');
  }

  /** The kept paths now, guard first (copies). */
  current(): Snode[][] {
    return this.paths.map((p) => [...p.nodes]);
  }

  /** Whether every kept path failed the last time it was used (and none carried a call since). */
  allFailing(): boolean {
    return this.paths.length > 0 && this.paths.every((p) => p.failures > 0);
  }

  /**
   * Keeps up to the desired number of paths, dropping those whose nodes left the pool; throws
   * NoOnionPathError when not even one path (and a destination outside it) can be had.
   */
  ensure(): void {
    const usable = this.usable();
    const byKey = new Set(usable.map((n) => n.ed25519));
    this.paths = this.paths.filter((p) => p.nodes.every((n) => byKey.has(n.ed25519)));
    const used = new Set(this.paths.flatMap((p) => p.nodes.map((n) => n.ed25519)));
    let free = shuffled(usable.filter((n) => !used.has(n.ed25519)));
    while (this.paths.length < this.desired && free.length >= this.hops) {
      this.paths.push({ nodes: free.slice(0, this.hops), kept: true, failures: 0 });
      free = free.slice(this.hops);
    }
    if (this.paths.length === 0) throw new NoOnionPathError(`no ${this.hops} nodes for a path could be found (${usable.length} usable)`);
  }

  /**
   * A path for a call to `destination` (Ed25519 hex): a random kept path without it and without any
   * node of `avoid` (the nodes of paths that already failed this call); else a path made for this
   * call from the other usable nodes. Throws NoOnionPathError when there is none.
   */
  pick(destination: string, avoid: ReadonlySet<string> = new Set()): OnionPath {
    this.ensure();
    const clear = (nodes: readonly Snode[]) => nodes.every((n) => n.ed25519 !== destination && !avoid.has(n.ed25519));
    const candidates = this.paths.filter((p) => clear(p.nodes));
    if (candidates.length > 0) return candidates[randomInt(candidates.length)]!;
    const others = shuffled(this.usable().filter((n) => n.ed25519 !== destination && !avoid.has(n.ed25519)));
    if (others.length < this.hops) {
      throw new NoOnionPathError(`every path holds the destination or failed, and ${others.length} other node(s) are not enough for a path of ${this.hops}`);
    }
    return { nodes: others.slice(0, this.hops), kept: false, failures: 0 };
  }

  succeeded(path: OnionPath): void {
    path.failures = 0;
  }

  /** Counts a failure of the path; at the threshold the path is dropped and its nodes rest. */
  failed(path: OnionPath): void {
    path.failures++;
    if (!path.kept || path.failures < this.failuresBeforeDrop) return;
    this.paths = this.paths.filter((p) => p !== path);
    const until = this.now() + this.restMs;
    for (const node of path.nodes) this.resting.set(node.ed25519, until);
  }

  /**
   * The network does not know this node: it rests, and a kept path holding it gets a random other
   * node in its place (or is dropped when there is none). Returns whether a kept path held it.
   */
  unknownNode(ed25519: string): boolean {
    this.resting.set(ed25519, this.now() + this.restMs);
    const index = this.paths.findIndex((p) => p.nodes.some((n) => n.ed25519 === ed25519));
    if (index === -1) return false;
    const path = this.paths[index]!;
    const used = new Set(this.paths.flatMap((p) => p.nodes.map((n) => n.ed25519)));
    let usable: Snode[] = [];
    try {
      usable = this.usable();
    } catch (error) {
      if (!(error instanceof NoOnionPathError)) throw error;
    }
    const spare = shuffled(usable.filter((n) => !used.has(n.ed25519)))[0] ?? shuffled(usable.filter((n) => !path.nodes.some((m) => m.ed25519 === n.ed25519)))[0];
    if (!spare) this.paths.splice(index, 1);
    else this.paths[index] = { nodes: path.nodes.map((n) => (n.ed25519 === ed25519 ? spare : n)), kept: true, failures: path.failures };
    return true;
  }

  /**
   * The pool's nodes with an X25519 key, not resting. When resting nodes leave too few for a path
   * and a destination, they are forgiven (they may be back) rather than leave no path at all.
   */
  private usable(): Snode[] {
    const now = this.now();
    for (const [key, until] of this.resting) if (until <= now) this.resting.delete(key);
    const seen = new Set<string>();
    const withKey = this.options.pool().filter((n) => {
      if (!n.x25519 || seen.has(n.ed25519)) return false;
      seen.add(n.ed25519);
      return true;
    });
    if (withKey.length < this.hops + 1) {
      throw new NoOnionPathError(`the pool has ${withKey.length} node(s) with an X25519 key; a path of ${this.hops} and a destination outside it need ${this.hops + 1}`);
    }
    const awake = withKey.filter((n) => !this.resting.has(n.ed25519));
    if (awake.length >= this.hops + 1) return awake;
    this.resting.clear();
    return withKey;
  }
}
