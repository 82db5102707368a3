/**
 * signal-cli's HTTP transport (`signal-cli daemon --http HOST:PORT`): calls and batches are
 * `POST /api/v1/rpc`, `receive` notifications come as Server-Sent Events on `GET /api/v1/events`.
 * The event stream's headers only arrive with its first event or keep-alive comment (about 15 s
 * after connecting), so opening it never times out; a lost stream is opened again with back-off,
 * from the last event id the daemon gave.
 *
 * A stream without an account covers the accounts the daemon has when it opens, not those linked
 * or registered later (found with the real signal-cli 0.13.19 against Signal's mock server): the
 * daemon's accounts are listed every `accountWatchMs`, and each account that appeared since the
 * stream opened gets a stream of its own (`?account=`) until the main stream opens again.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import type { JSONRPCRequest, JSONRPCResponse } from 'json-rpc-2.0';
import { Backoff } from '../../net/backoff.ts';
import { numbersOfAccounts } from './accounts.ts';
import { RpcRequester } from './rpc-requester.ts';
import { MAX_DAEMON_FRAME_BYTES, SignalDaemonUnavailableError, type CallOptions, type ChannelState, type RpcCall, type RpcOutcome, type SignalRpc } from './signal-rpc.ts';

export interface HttpSignalRpcOptions {
  /** The daemon's base URL, e.g. `http://127.0.0.1:8081`. */
  readonly url: string;
  /** How long a call may wait for its answer. */
  readonly timeoutMs: number;
  readonly reconnect?: { readonly minMs: number; readonly maxMs: number };
  readonly onMalformed?: (reason: string) => void;
  /** How often the daemon's accounts are listed for ones the event stream does not cover. Default 5000 ms. */
  readonly accountWatchMs?: number;
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
  /** The accounts the main event stream covers: those listed before it opened. */
  private covered = new Set<string>();
  /** Streams of accounts that appeared after the main stream opened. */
  private readonly accountStreams = new Map<string, AbortController>();
  private watcher: NodeJS.Timeout | undefined;

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
        const before = await this.accountNumbers();
        this.endAccountStreams();
        this.covered = new Set(before);
        await this.followEvents('', this.streamAbort.signal, onReceive, () => {
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
    this.watchAccounts(onReceive);
  }

  /** Opens a stream of its own for each account the main stream does not cover, every `accountWatchMs`. */
  private watchAccounts(onReceive: (params: unknown) => void): void {
    let busy = false;
    this.watcher = setInterval(() => {
      if (busy || this.closed) return;
      busy = true;
      this.accountNumbers()
        .then((accounts) => {
          for (const account of accounts) {
            if (this.covered.has(account) || this.accountStreams.has(account)) continue;
            const abort = new AbortController();
            this.accountStreams.set(account, abort);
            void this.followAccount(account, abort, onReceive);
          }
        })
        .catch(() => undefined) // the daemon is away: the next round looks again
        .finally(() => (busy = false));
    }, this.options.accountWatchMs ?? 5_000);
    this.watcher.unref();
  }

  /** One account's stream, opened again with back-off until the main stream covers the account. */
  private async followAccount(account: string, abort: AbortController, onReceive: (params: unknown) => void): Promise<void> {
    const backoff = new Backoff(this.options.reconnect?.minMs ?? 500, this.options.reconnect?.maxMs ?? 30_000);
    while (!abort.signal.aborted && !this.closed) {
      try {
        await this.followEvents(`?account=${encodeURIComponent(account)}`, abort.signal, onReceive, () => backoff.reset());
      } catch {
        // lost, or the account went: tried again below while it is still watched
      }
      if (abort.signal.aborted || this.closed) return;
      await new Promise((resolve) => setTimeout(resolve, backoff.delay()));
    }
  }

  private endAccountStreams(): void {
    for (const abort of this.accountStreams.values()) abort.abort();
    this.accountStreams.clear();
  }

  private async accountNumbers(): Promise<string[]> {
    return numbersOfAccounts(await this.requester.call('listAccounts'));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    if (this.watcher) clearInterval(this.watcher);
    this.streamAbort.abort();
    this.endAccountStreams();
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
  private async followEvents(query: string, signal: AbortSignal, onReceive: (params: unknown) => void, onOpen: () => void): Promise<void> {
    const response = await fetch(`${this.base}/api/v1/events${query}`, {
      headers: { accept: 'text/event-stream', ...(!query && this.lastEventId ? { 'last-event-id': this.lastEventId } : {}) },
      signal,
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
        if (event.id && !query) this.lastEventId = event.id;
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
