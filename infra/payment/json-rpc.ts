/**
 * What the JSON-RPC clients of the payment nodes (monero/wallet-rpc-client.ts,
 * bitcoin/bitcoin-rpc-client.ts) share: the node's URL parted from its login, so that no message
 * carries the login, and the refusal that carries the node's error code.
 */
import http from 'node:http';
import https from 'node:https';
import { PaymentProcessorError } from './port.ts';

/** The node answered a call with an error, or refused the login: trying again will not help. */
export class PaymentRpcError extends PaymentProcessorError {
  override readonly name: string = 'PaymentRpcError';
  constructor(
    message: string,
    /** The node's JSON-RPC error code, or 401 for a refused login. */
    readonly code: number,
  ) {
    super(message);
  }
}

export interface RpcTarget {
  /** The node's URL, its login taken out. */
  readonly url: URL;
  readonly username: string;
  readonly password: string;
  /** Keeps its connections to the node alive, at most `maxSockets` of them. */
  readonly agent: http.Agent;
}

/** The node at `text` (`http://user:password@host:port/…`); `name` says whose URL it is in the RangeError a bad one gets. */
export const rpcTargetOf = (text: string, name: string, maxSockets: number): RpcTarget => {
  const url = new URL(text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new RangeError(`The ${name} URL must be http: or https:`);
  const username = decodeURIComponent(url.username);
  const password = decodeURIComponent(url.password);
  url.username = '';
  url.password = '';
  const transport = url.protocol === 'https:' ? https : http;
  return { url, username, password, agent: new transport.Agent({ keepAlive: true, maxSockets }) };
};
