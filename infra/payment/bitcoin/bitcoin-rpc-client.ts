/**
 * A small JSON-RPC client for Bitcoin Core's RPC (bitcoind, and litecoind, which speaks the same):
 * `POST` to the node's address, or to `/wallet/<name>` for one wallet's calls, with HTTP Basic
 * authentication from the URL's login (`http://user:password@127.0.0.1:8332/wallet/merchant`).
 * Every call is bounded by a timeout, every answer in size; numbers are kept as their text
 * (bitcoin-json.ts) so that amounts are read exactly.
 *
 * Failures are typed: the node cannot be reached, did not answer in time, answered something
 * that is not a JSON-RPC answer, is still warming up, is overloaded (HTTP 503), or has not loaded
 * the wallet → BitcoinRpcUnavailableError (a PaymentProcessorUnavailableError: try again later);
 * it refused the login, or answered the call with an error → BitcoinRpcError (a
 * PaymentProcessorError). Messages never carry the login.
 */
import { boundedPost, errorMessageOf, type PostAnswer } from '../../net/bounded-post.ts';
import { PaymentRpcError, rpcTargetOf } from '../json-rpc.ts';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { integerOf, isRpcObject, parseRpcJson, type RpcJson } from './bitcoin-json.ts';

export class BitcoinRpcUnavailableError extends PaymentProcessorUnavailableError {
  override readonly name: string = 'BitcoinRpcUnavailableError';
}

/** Its `code`: Bitcoin Core's RPC error code (-5: invalid address …), or 401 for a refused login. */
export class BitcoinRpcError extends PaymentRpcError {
  override readonly name: string = 'BitcoinRpcError';
}

/** Bitcoin Core's error codes that mean "not now" rather than "no". */
export const RPC_IN_WARMUP = -28;
export const RPC_WALLET_NOT_FOUND = -18;
const UNAVAILABLE_CODES: ReadonlySet<number> = new Set([RPC_IN_WARMUP, RPC_WALLET_NOT_FOUND]);

export const MAX_RPC_ANSWER_BYTES = 32 * 1024 * 1024;

export interface BitcoinRpcClientOptions {
  /** e.g. `http://relay:secret@127.0.0.1:19491/wallet/merchant`. */
  readonly url: string;
  /** Default for each call. Default 10000. */
  readonly timeoutMs?: number;
  readonly maxAnswerBytes?: number;
}

export interface BitcoinRpcClient {
  /** The call's `result`, numbers as their text. */
  call(method: string, params?: readonly unknown[], options?: { readonly timeoutMs?: number }): Promise<RpcJson>;
  /** The node's address and path without the login, for messages. */
  readonly endpoint: string;
  /** Closes the connections; later calls fail with BitcoinRpcUnavailableError. */
  close(): void;
}

export const createBitcoinRpcClient = (options: BitcoinRpcClientOptions): BitcoinRpcClient => {
  // Bitcoin Core serves a few calls at once (-rpcthreads, 4 by default).
  const { url, username, password, agent } = rpcTargetOf(options.url, 'Bitcoin RPC', 4);
  const authorization = username || password ? `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}` : undefined;
  const path = url.pathname.replace(/\/+$/, '') || '/';
  const endpoint = `${url.origin}${path === '/' ? '' : path}`;
  const defaultTimeoutMs = options.timeoutMs ?? 10_000;
  const maxAnswerBytes = options.maxAnswerBytes ?? MAX_RPC_ANSWER_BYTES;
  let nextId = 0;
  let closed = false;

  const post = (body: string, signal: AbortSignal) =>
    boundedPost(url, { path, headers: { 'content-type': 'application/json', ...(authorization ? { authorization } : {}) }, body, agent, signal, maxAnswerBytes });

  const call = async (method: string, params: readonly unknown[] = [], callOptions: { readonly timeoutMs?: number } = {}): Promise<RpcJson> => {
    if (closed) throw new BitcoinRpcUnavailableError(`The client of the Bitcoin RPC at ${endpoint} is closed`);
    const timeoutMs = callOptions.timeoutMs ?? defaultTimeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    const body = JSON.stringify({ jsonrpc: '1.0', id: ++nextId, method, params }, (_key, value: unknown) => (typeof value === 'bigint' ? Number(value) : value));
    let answer: PostAnswer;
    try {
      answer = await post(body, signal);
    } catch (error) {
      if (signal.aborted) throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} did not answer ${method} within ${timeoutMs} ms`);
      throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} cannot be reached: ${errorMessageOf(error)}`);
    }
    if (answer.status === 401 || answer.status === 403) throw new BitcoinRpcError(`The Bitcoin RPC at ${endpoint} refused the login (HTTP ${answer.status})`, 401);
    // Errors come with HTTP 500 (404 for an unknown method) and a JSON-RPC error in the body.
    let parsed: RpcJson | undefined;
    try {
      parsed = parseRpcJson(answer.text);
    } catch {
      parsed = undefined;
    }
    if (!isRpcObject(parsed)) {
      if (answer.status !== 200) throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} answered HTTP ${answer.status} to ${method}`);
      throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} answered ${method} with something that is not a JSON-RPC answer`);
    }
    const error = parsed.error;
    if (error !== undefined && error !== null) {
      const fields = isRpcObject(error) ? error : {};
      const code = integerOf(fields.code) ?? 0;
      const message = typeof fields.message === 'string' ? fields.message.slice(0, 500) : 'unknown error';
      if (UNAVAILABLE_CODES.has(code)) throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} cannot serve ${method} now: ${message} (${code})`);
      throw new BitcoinRpcError(`The Bitcoin RPC at ${endpoint} refused ${method}: ${message} (${code})`, code);
    }
    if (answer.status !== 200) throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} answered HTTP ${answer.status} to ${method}`);
    if (!('result' in parsed)) throw new BitcoinRpcUnavailableError(`The Bitcoin RPC at ${endpoint} answered ${method} without a result`);
    return parsed.result ?? null;
  };

  const close = () => {
    closed = true;
    agent.destroy();
  };

  return { call, endpoint, close };
};
