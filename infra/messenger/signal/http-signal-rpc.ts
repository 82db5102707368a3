/**
 * signal-cli's HTTP transport (`signal-cli daemon --http HOST:PORT`): calls and batches are
 * `POST /api/v1/rpc`, `receive` notifications come as Server-Sent Events on `GET /api/v1/events`.
 * The event stream's headers only arrive with its first event or keep-alive comment (about 15 s
 * after connecting), so opening it never times out; a lost stream is opened again with back-off,
 * from the last event id the daemon gave.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { JSONRPCRequest, JSONRPCResponse } from 'json-rpc-2.0';
import { Backoff } from '../../net/backoff.ts';
import { RpcRequester } from './rpc-requester.ts';
import { MAX_DAEMON_FRAME_BYTES, SignalDaemonUnavailableError, type CallOptions, type ChannelState, type RpcCall, type RpcOutcome, type SignalRpc } from './signal-rpc.ts';

export interface HttpSignalRpcOptions {
  /** The daemon's base URL, e.g. `http://127.0.0.1:8081`. */
  readonly url: string;
  /** How long a call may wait for its answer. */
  readonly timeoutMs: number;
  readonly reconnect?: { readonly minMs: number; readonly maxMs: number };
  readonly onMalformed?: (reason: string) => void;
}

const readBounded = async (response: Response): Promise<string> => {
  const declared = Number(response.headers.get('content-length') ?? 0);
  if (declared > MAX_DAEMON_FRAME_BYTES) throw new Error(`answer of ${declared} bytes exceeds ${MAX_DAEMON_FRAME_BYTES}`);
  const text = await response.text();
  if (Buffer.byteLength(text) > MAX_DAEMON_FRAME_BYTES) throw new Error(`answer exceeds ${MAX_DAEMON_FRAME_BYTES} bytes`);
  return text;
};

export class HttpSignalRpc implements SignalRpc {
  private readonly base: string;
  private readonly requester: RpcRequester;
  private readonly streamAbort = new AbortController();
  private listening = false;
  private closed = false;
  private lastEventId: string | undefined;
  private retryTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: HttpSignalRpcOptions) {
    this.base = options.url.replace(/\/+$/, '');
    this.requester = new RpcRequester((payload, { timeoutMs }) => this.post(payload, timeoutMs), options.timeoutMs);
  }

  call(method: string, params?: Record<string, unknown>, options?: CallOptions): Promise<unknown> {
    return this.requester.call(method, params, options);
  }

  batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    return this.requester.batch(calls);
  }

  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    try {
      await this.post({ jsonrpc: '2.0', method, ...(params ? { params } : {}) } as JSONRPCRequest, this.options.timeoutMs);
    } catch (error) {
      throw new SignalDaemonUnavailableError(`signal-cli daemon unavailable: ${(error as Error).message}`);
    }
  }

  listen(onReceive: (params: unknown) => void, onState: (state: ChannelState) => void = () => undefined): void {
    if (this.listening) throw new Error('already listening');
    this.listening = true;
    const backoff = new Backoff(this.options.reconnect?.minMs ?? 500, this.options.reconnect?.maxMs ?? 30_000);
    const connect = async () => {
      let reason: string;
      try {
        await this.followEvents(onReceive, () => {
          backoff.reset();
          onState({ open: true });
        });
        reason = 'the daemon ended the event stream';
      } catch (error) {
        reason = (error as Error).message;
      }
      if (this.closed) return;
      onState({ open: false, reason });
      this.retryTimer = setTimeout(() => void connect(), backoff.delay());
    };
    void connect();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.streamAbort.abort();
    this.requester.failPending('the connector is closing');
  }

  private async post(payload: JSONRPCRequest | JSONRPCRequest[], timeoutMs: number): Promise<void> {
    const response = await fetch(`${this.base}/api/v1/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (response.status === 201) return; // a notification: no answer
    if (response.status !== 200) {
      await response.body?.cancel();
      throw new Error(`POST /api/v1/rpc answered HTTP ${response.status}`);
    }
    const text = await readBounded(response);
    let answer: unknown;
    try {
      answer = JSON.parse(text);
    } catch {
      throw new Error('POST /api/v1/rpc answered with a body that is not JSON');
    }
    this.requester.receive(answer as JSONRPCResponse | JSONRPCResponse[]);
  }

  /** One connection of the event stream, until it ends or fails. */
  private async followEvents(onReceive: (params: unknown) => void, onOpen: () => void): Promise<void> {
    const response = await fetch(`${this.base}/api/v1/events`, {
      headers: { accept: 'text/event-stream', ...(this.lastEventId ? { 'last-event-id': this.lastEventId } : {}) },
      signal: this.streamAbort.signal,
    });
    if (response.status !== 200 || !response.body) {
      await response.body?.cancel();
      throw new Error(`GET /api/v1/events answered HTTP ${response.status}`);
    }
    onOpen();
    let pendingBytes = 0;
    const parser = createParser({
      onEvent: (event: EventSourceMessage) => {
        pendingBytes = 0;
        if (event.id) this.lastEventId = event.id;
        if (event.event !== 'receive') return;
        let params: unknown;
        try {
          params = JSON.parse(event.data);
        } catch {
          this.options.onMalformed?.('an event of the daemon was not JSON');
          return;
        }
        onReceive(params);
      },
      onError: (error) => this.options.onMalformed?.(`the daemon's event stream: ${error.message}`),
    });
    const decoder = new TextDecoder();
    for await (const chunk of response.body) {
      pendingBytes += chunk.byteLength;
      if (pendingBytes > MAX_DAEMON_FRAME_BYTES) {
        await response.body.cancel().catch(() => undefined);
        throw new Error(`an event of the daemon exceeded ${MAX_DAEMON_FRAME_BYTES} bytes`);
      }
      parser.feed(decoder.decode(chunk, { stream: true }));
    }
  }
}
