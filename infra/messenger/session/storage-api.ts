import type { Snode } from './snode-pool.ts';
import type { SnodeTransport } from './snode-transport.ts';

/**
 * What Relay's client of Session's storage servers takes and gives (storage-client.ts): its
 * options, its errors, and what a retrieve or a poll returns. Facts: ../shared/notes/session-protocol.md §3–§6.
 */
export interface SessionStorageOptions {
  /** Seed node base URLs (`https://host:port`), all asked for the first pool. */
  readonly seedNodes: readonly string[];
  /** The seeds' certificate(s), PEM; the real seeds' pinned certificates when not given. */
  readonly seedCa?: string | Buffer | readonly string[];
  /** Take node addresses that are not public (loopback, private…) from the network's answers: for tests on loopback only. */
  readonly allowPrivateAddresses?: boolean;
  /** Nodes a pool refresh must agree on (the nodes all three sources list), else the seeds are asked. Default 24, as Session Desktop. */
  readonly minAgreement?: number;
  readonly requestTimeoutMs?: number;
  readonly maxResponseBytes?: number;
  readonly maxPoolSize?: number;
  /** Below this many nodes the pool is fetched from the seeds again. */
  readonly minPoolSize?: number;
  readonly poolRefreshMs?: number;
  readonly swarmCacheMs?: number;
  /** Nodes tried for one call before it fails. */
  readonly maxAttempts?: number;
  /** Hashes remembered as handed on. */
  readonly maxSeenHashes?: number;
  readonly now?: () => number;
  /**
   * How calls reach the storage servers: `onion` (the default: three-hop onion paths built from
   * this client's pool, as Session's apps send every request), `direct` (plain HTTPS: every node
   * called sees this machine's address), or a transport of the caller's, made from a pool reader.
   */
  readonly transport?: 'onion' | 'direct' | ((pool: () => readonly Snode[]) => SnodeTransport);
}

export const DEFAULT_SEED_NODES: readonly string[] = ['https://seed1.getsession.org:4443', 'https://seed2.getsession.org:4443', 'https://seed3.getsession.org:4443'];

/** The storage server's TTL bounds for a public inbox namespace such as 0 (request_handler.h). */
export const TTL_MIN_MS = 10_000;
export const TTL_MAX_MS = 14 * 24 * 3_600_000;
/** A `store`'s data, raw (client_rpc_endpoints.h `MAX_MESSAGE_BODY`). */
export const MAX_MESSAGE_BYTES = 76_800;

/**
 * The network could not finish the call: try later. `lastStatus` is the last HTTP status a node
 * answered with (a node refusing for load, 5xx or 429), undefined when no node answered at all.
 */
export class SessionNetworkError extends Error {
  override readonly name = 'SessionNetworkError';
  constructor(
    message: string,
    readonly lastStatus?: number,
  ) {
    super(message);
  }
}

/** A storage server refused the request itself (not the node's health): retrying will not help. */
export class SessionRefusedError extends Error {
  override readonly name = 'SessionRefusedError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface RetrievedMessage {
  readonly hash: string;
  readonly timestamp: number;
  readonly expiration: number;
  readonly data: Buffer;
}

export interface PollResult {
  readonly node: string;
  /** Messages handed to the handler (new ones only). */
  readonly handled: number;
  /** Messages the node returned that had been handed on before. */
  readonly duplicates: number;
  /** Entries of the answer that were not well-formed messages, or whose hash is not the hash of their data. */
  readonly malformed: number;
  /** The node has more after these. */
  readonly more: boolean;
}

export interface StorageHealth {
  /** Why calls cannot travel now (no onion path can be built), when the transport knows. */
  readonly transportProblem?: string;
  readonly poolSize: number;
  readonly clockOffsetMs: number;
  readonly lastSuccessAt?: number;
  readonly lastError?: string;
}
