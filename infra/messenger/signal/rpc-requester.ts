/**
 * JSON-RPC 2.0 requests over any transport: ids, matching answers to calls by id (signal-cli
 * answers out of order), batches and timeouts come from the json-rpc-2.0 library; this module
 * turns its outcomes into the two errors the connector tells apart.
 */
import { JSONRPCClient, JSONRPCErrorException, createJSONRPCErrorResponse, type JSONRPCRequest, type JSONRPCResponse } from 'json-rpc-2.0';
import { SignalDaemonError, SignalDaemonUnavailableError, type CallOptions, type RpcCall, type RpcOutcome } from './signal-rpc.ts';

/** What a transport's send is told of a call: how long it may take. */
export interface SendOptions {
  readonly timeoutMs: number;
}

/** The library's code for failures on this side (no answer in time, connection lost); the daemon never uses it. */
const LOCAL_FAILURE = 0;

const failureOf = (error: unknown): Error => {
  if (error instanceof JSONRPCErrorException && error.code !== LOCAL_FAILURE) return new SignalDaemonError(error.code, error.message, error.data ?? null);
  const reason = error instanceof Error ? error.message : String(error);
  return new SignalDaemonUnavailableError(`signal-cli daemon unavailable: ${reason}`);
};

export class RpcRequester {
  private readonly client: JSONRPCClient<SendOptions>;
  private nextId = 1;

  /** `send` writes one request or batch to the daemon; answers come back through `receive`. */
  constructor(
    send: (payload: JSONRPCRequest | JSONRPCRequest[], options: SendOptions) => Promise<void>,
    private readonly timeoutMs: number,
  ) {
    this.client = new JSONRPCClient<SendOptions>((payload: JSONRPCRequest | JSONRPCRequest[], options: SendOptions) => send(payload, options), () => this.nextId++);
  }

  /** Hands the daemon's answer (or answers) to the calls waiting for them; unknown ids are ignored. */
  receive(answer: JSONRPCResponse | JSONRPCResponse[]): void {
    this.client.receive(answer);
  }

  async call(method: string, params?: Record<string, unknown>, options: CallOptions = {}): Promise<unknown> {
    const timeoutMs = options.timeoutMs ?? this.timeoutMs;
    try {
      return await this.withTimeout(timeoutMs).request(method, params, { timeoutMs });
    } catch (error) {
      throw failureOf(error);
    }
  }

  async batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    if (calls.length === 0) return [];
    const requests: JSONRPCRequest[] = calls.map((c) => ({ jsonrpc: '2.0', id: this.nextId++, method: c.method, ...(c.params ? { params: c.params } : {}) }));
    let answers: JSONRPCResponse[];
    try {
      answers = await this.withTimeout(this.timeoutMs).requestAdvanced(requests, { timeoutMs: this.timeoutMs });
    } catch (error) {
      throw failureOf(error);
    }
    const byId = new Map(answers.map((a) => [a.id, a]));
    return requests.map((request): RpcOutcome => {
      const answer = byId.get(request.id ?? null);
      if (!answer) throw new SignalDaemonUnavailableError('signal-cli daemon unavailable: a batch answer was missing');
      if (answer.error) {
        if (answer.error.code === LOCAL_FAILURE) throw failureOf(new Error(answer.error.message));
        return { ok: false, error: new SignalDaemonError(answer.error.code, answer.error.message, answer.error.data ?? null) };
      }
      return { ok: true, result: answer.result };
    });
  }

  /** Ends every call still waiting (the connection is gone): each rejects as unavailable. */
  failPending(reason: string): void {
    this.client.rejectAllPendingRequests(reason);
  }

  private withTimeout(timeoutMs: number) {
    return this.client.timeout(timeoutMs, (id) => createJSONRPCErrorResponse(id, LOCAL_FAILURE, `no answer within ${timeoutMs} ms`));
  }
}
