/**
 * What the Signal connector needs of signal-cli's JSON-RPC 2.0 interface, whatever carries it
 * (HTTP with Server-Sent Events, or the line-delimited TCP socket): calls matched to their answers
 * by id, batches, and the daemon's `receive` notifications for every account it serves.
 */
import { UnavailableError } from '../../errors/unavailable.ts';

export interface CallOptions {
  readonly timeoutMs?: number;
}

export interface RpcCall {
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

/** One answer of a batch: its result, or the daemon's error for that call. */
export type RpcOutcome = { readonly ok: true; readonly result: unknown } | { readonly ok: false; readonly error: SignalDaemonError };

export interface SignalRpc {
  /**
   * Resolves with the call's result; rejects with SignalDaemonError or SignalDaemonUnavailableError.
   * `timeoutMs` replaces the transport's for a call that waits on a person (finishLink).
   */
  call(method: string, params?: Record<string, unknown>, options?: CallOptions): Promise<unknown>;
  /** Several calls in one request; each answer in the order of `calls`. */
  batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]>;
  /** A call the daemon does not answer (a JSON-RPC notification). */
  notify(method: string, params?: Record<string, unknown>): Promise<void>;
  /**
   * Starts handing on the daemon's `receive` notifications (their `params`: envelope and account);
   * `onState` says when the event channel is open and when it was lost.
   */
  listen(onReceive: (params: unknown) => void, onState?: (state: ChannelState) => void): void;
  close(): Promise<void>;
}

export type ChannelState = { readonly open: true } | { readonly open: false; readonly reason: string };

/** signal-cli's own error codes (SignalJsonRpcCommandHandler) beside JSON-RPC's. */
export const SIGNAL_ERROR_CODES = {
  userError: -1,
  ioError: -3,
  untrustedKey: -4,
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internalError: -32603,
} as const;

/** The daemon answered the call with a JSON-RPC error. */
export class SignalDaemonError extends Error {
  override readonly name = 'SignalDaemonError';

  constructor(
    readonly code: number,
    message: string,
    readonly data: unknown,
  ) {
    super(message);
  }
}

/** The daemon could not be reached or did not answer in time: nothing is known of the call's effect. */
export class SignalDaemonUnavailableError extends UnavailableError {
  override readonly name = 'SignalDaemonUnavailableError';
}

/** Largest answer, notification or SSE event accepted from the daemon (a message is at most 64 KB of text). */
export const MAX_DAEMON_FRAME_BYTES = 4 * 1024 * 1024;
