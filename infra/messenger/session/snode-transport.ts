import type { Snode } from './snode-pool.ts';

/** An HTTP answer of a service node or seed. */
export interface HttpAnswer {
  readonly status: number;
  /** Parsed JSON when the server said application/json, else the text. */
  readonly body: unknown;
}

/**
 * How one storage RPC call reaches a service node: directly over HTTPS (`DirectTransport`, the
 * node sees the bot's IP address) or through a three-hop onion path (`OnionTransport`, as Session's
 * apps send every request). The storage client decides which node to ask and what an answer means;
 * a transport only carries the call there and the answer back.
 *
 * `storageRpc` resolves with the node's status and body; it rejects with `SnodeUnreachableError`
 * when the call got no answer from the destination (refused, reset, timed out, too large, or a
 * path that failed on the way: the transport has already dropped or rebuilt what failed).
 */
export interface SnodeTransport {
  storageRpc(node: Snode, method: string, params: object): Promise<HttpAnswer>;
  /** Why the transport cannot carry a call now (no onion path can be built), when it knows. */
  health?(): { readonly ready: boolean; readonly reason?: string };
  close(): void;
}
