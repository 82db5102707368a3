/**
 * A small JSON-RPC client for monero-wallet-rpc (`POST /json_rpc`; monerod answers the same way):
 * every call bounded by a timeout, answers bounded in size and parsed with exact integers
 * (wallet-json.ts), Digest authentication when the URL carries a login
 * (`http://user:password@host:port`).
 *
 * Calls go one at a time over one kept-alive connection: monero-wallet-rpc serves calls one by
 * one anyway, and its Digest nonce belongs to the connection it was given on (a request with it
 * on another connection is refused), so Node's fetch, which may pick any pooled connection, will
 * not do. A new connection answers 401 with a new challenge, which is answered once.
 *
 * Failures are typed: the wallet cannot be reached, did not answer in time, answered something
 * that is not a JSON-RPC answer, or has no wallet open → MoneroWalletUnavailableError (a
 * PaymentProcessorUnavailableError: try again later); it refused the login, or answered the call
 * with an error → MoneroWalletRpcError (a PaymentProcessorError). Messages never carry the login.
 */
import { boundedPost, errorMessageOf } from '../../net/bounded-post.ts';
import { PaymentRpcError, rpcTargetOf } from '../json-rpc.ts';
import { PaymentProcessorUnavailableError } from '../port.ts';
import { digestAuthorization, parseDigestChallenge, type DigestChallenge } from './digest-auth.ts';
import { parseWalletJson, stringifyWalletJson, type WalletJson } from './wallet-json.ts';

export class MoneroWalletUnavailableError extends PaymentProcessorUnavailableError {
  override readonly name: string = 'MoneroWalletUnavailableError';
}

/** Its `code`: the JSON-RPC error code (-13: no wallet open …), or 401 for a refused login. */
export class MoneroWalletRpcError extends PaymentRpcError {
  override readonly name: string = 'MoneroWalletRpcError';
}

/** monero-wallet-rpc's error code for "No wallet file": the process runs but has no wallet open. */
export const NO_WALLET_OPEN = -13;

export const MAX_WALLET_ANSWER_BYTES = 32 * 1024 * 1024;

export interface WalletRpcClientOptions {
  /** e.g. `http://127.0.0.1:18082` or `http://relay:secret@127.0.0.1:18082`. */
  readonly url: string;
  /** Default for each call, from the moment it is made (waiting for the calls before it included). Default 10000. */
  readonly timeoutMs?: number;
  readonly maxAnswerBytes?: number;
}

export interface WalletRpcClient {
  /** The call's `result`, integers as bigint. */
  call(method: string, params?: Record<string, unknown>, options?: { readonly timeoutMs?: number }): Promise<WalletJson>;
  /** The wallet's address without the login, for messages. */
  readonly endpoint: string;
  /** Closes the connection; later calls fail with MoneroWalletUnavailableError. */
  close(): void;
}

export const createWalletRpcClient = (options: WalletRpcClientOptions): WalletRpcClient => {
  const { url, username, password, agent } = rpcTargetOf(options.url, 'wallet RPC', 1);
  const path = `${url.pathname.replace(/\/+$/, '')}/json_rpc`;
  const endpoint = url.origin;
  const defaultTimeoutMs = options.timeoutMs ?? 10_000;
  const maxAnswerBytes = options.maxAnswerBytes ?? MAX_WALLET_ANSWER_BYTES;
  let challenge: DigestChallenge | undefined;
  let count = 0;
  let nextId = 0;
  let closed = false;

  const post = async (body: string, signal: AbortSignal) => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (challenge && username) headers.authorization = digestAuthorization(challenge, { username, password, method: 'POST', uri: path, count: ++count });
    const answer = await boundedPost(url, { path, headers, body, agent, signal, maxAnswerBytes });
    const offered = answer.headers['www-authenticate'];
    return { ...answer, challenge: Array.isArray(offered) ? offered.join(', ') : offered };
  };

  // One call at a time (see above).
  let queue: Promise<unknown> = Promise.resolve();

  const call = (method: string, params: Record<string, unknown> = {}, callOptions: { readonly timeoutMs?: number } = {}): Promise<WalletJson> => {
    const timeoutMs = callOptions.timeoutMs ?? defaultTimeoutMs;
    const signal = AbortSignal.timeout(timeoutMs);
    const result = queue.then(() => callNow(method, params, timeoutMs, signal));
    queue = result.catch(() => undefined);
    return result;
  };

  const callNow = async (method: string, params: Record<string, unknown>, timeoutMs: number, signal: AbortSignal): Promise<WalletJson> => {
    if (closed) throw new MoneroWalletUnavailableError(`The client of monero-wallet-rpc at ${endpoint} is closed`);
    const body = stringifyWalletJson({ jsonrpc: '2.0', id: String(++nextId), method, params });
    let answer: Awaited<ReturnType<typeof post>>;
    try {
      if (signal.aborted) throw signal.reason;
      answer = await post(body, signal);
      // A new connection, or a nonce gone stale: answer the wallet's challenge once.
      if (answer.status === 401 && username) {
        const offered = parseDigestChallenge(answer.challenge ?? null);
        if (offered) {
          challenge = offered;
          count = 0;
          answer = await post(body, signal);
        }
      }
    } catch (error) {
      if (signal.aborted) throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} did not answer ${method} within ${timeoutMs} ms`);
      throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} cannot be reached: ${errorMessageOf(error)}`);
    }
    if (answer.status === 401 || answer.status === 403)
      throw new MoneroWalletRpcError(`monero-wallet-rpc at ${endpoint} refused the login (HTTP ${answer.status})`, 401);
    if (answer.status !== 200) throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} answered HTTP ${answer.status} to ${method}`);
    let parsed: WalletJson;
    try {
      parsed = parseWalletJson(answer.text);
    } catch {
      throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} answered ${method} with something that is not JSON`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} answered ${method} with something that is not a JSON-RPC answer`);
    const error = parsed.error;
    if (error !== undefined && error !== null) {
      const fields = typeof error === 'object' && !Array.isArray(error) ? error : {};
      const code = typeof fields.code === 'bigint' ? Number(fields.code) : 0;
      const message = typeof fields.message === 'string' ? fields.message : 'unknown error';
      if (code === NO_WALLET_OPEN) throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} has no wallet open`);
      throw new MoneroWalletRpcError(`monero-wallet-rpc refused ${method}: ${message} (${code})`, code);
    }
    if (!('result' in parsed)) throw new MoneroWalletUnavailableError(`monero-wallet-rpc at ${endpoint} answered ${method} without a result`);
    return parsed.result ?? null;
  };

  const close = () => {
    closed = true;
    agent.destroy();
  };

  return { call, endpoint, close };
};
