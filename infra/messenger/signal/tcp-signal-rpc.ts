/**
 * signal-cli's TCP transport (`signal-cli daemon --tcp HOST:PORT`): one JSON-RPC message per line
 * both ways, answers in any order (matched by id), `receive` notifications on the same socket.
 * One long-lived connection, opened again with back-off when lost; calls made while it is down
 * fail at once as unavailable rather than wait.
 */
import net from 'node:net';
import type { JSONRPCRequest, JSONRPCResponse } from 'json-rpc-2.0';
import { Backoff } from '../../net/backoff.ts';
import { LineBuffer } from '../../net/line-buffer.ts';
import { RpcRequester } from './rpc-requester.ts';
import { numbersOfAccounts } from './accounts.ts';
import { MAX_DAEMON_FRAME_BYTES, SignalDaemonUnavailableError, type CallOptions, type ChannelState, type RpcCall, type RpcOutcome, type SignalRpc } from './signal-rpc.ts';

export interface TcpSignalRpcOptions {
  readonly host: string;
  readonly port: number;
  readonly timeoutMs: number;
  readonly reconnect?: { readonly minMs: number; readonly maxMs: number };
  readonly onMalformed?: (reason: string) => void;
  /**
   * For a daemon started with `--receive-mode manual`: once listening, subscribe on every
   * connection (`subscribeReceive`), so that the daemon receives from Signal only while Relay
   * listens and messages wait on Signal's servers otherwise.
   */
  readonly subscribe?: boolean;
  /**
   * With `subscribe`: how often the daemon's accounts are listed, so that one linked or registered
   * while Relay listens gets a subscription of its own (signal-cli 0.13.19's `subscribeReceive`
   * without an account covers only the accounts present when it was made). Default 5000 ms.
   */
  readonly accountWatchMs?: number;
}

type Line = { id?: unknown; method?: unknown; params?: unknown; result?: unknown; error?: unknown };

/** The `params` of a `receive` notification; with `--receive-mode manual` they are wrapped in `{ subscription, result }`. */
const receivedParams = (params: unknown): unknown => {
  if (params && typeof params === 'object' && 'subscription' in params && 'result' in params) return (params as { result: unknown }).result;
  return params;
};

export class TcpSignalRpc implements SignalRpc {
  private readonly requester: RpcRequester;
  private readonly backoff: Backoff;
  private socket: net.Socket | undefined;
  private connected = false;
  private closed = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private onReceive: ((params: unknown) => void) | undefined;
  private onState: (state: ChannelState) => void = () => undefined;
  private firstConnection: Promise<void> | undefined;
  /** The accounts the subscriptions of this connection cover (manual receive mode). */
  private covered = new Set<string>();
  private watcher: NodeJS.Timeout | undefined;

  constructor(private readonly options: TcpSignalRpcOptions) {
    this.requester = new RpcRequester((payload) => this.write(payload), options.timeoutMs);
    this.backoff = new Backoff(options.reconnect?.minMs ?? 500, options.reconnect?.maxMs ?? 30_000);
  }

  /** Opens the connection (and keeps it open); resolves once the first attempt connected or failed. */
  start(): Promise<void> {
    this.firstConnection ??= new Promise((resolve) => this.connect(resolve));
    return this.firstConnection;
  }

  async call(method: string, params?: Record<string, unknown>, options?: CallOptions): Promise<unknown> {
    await this.start();
    return this.requester.call(method, params, options);
  }

  async batch(calls: readonly RpcCall[]): Promise<RpcOutcome[]> {
    await this.start();
    return this.requester.batch(calls);
  }

  async notify(method: string, params?: Record<string, unknown>): Promise<void> {
    await this.start();
    try {
      await this.write({ jsonrpc: '2.0', method, ...(params ? { params } : {}) } as JSONRPCRequest);
    } catch (error) {
      throw new SignalDaemonUnavailableError(`signal-cli daemon unavailable: ${(error as Error).message}`);
    }
  }

  listen(onReceive: (params: unknown) => void, onState: (state: ChannelState) => void = () => undefined): void {
    if (this.onReceive) throw new Error('already listening');
    this.onReceive = onReceive;
    this.onState = onState;
    if (this.connected && this.socket) this.channelOpened(this.socket);
    void this.start();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.stopWatching();
    this.socket?.destroy();
    this.requester.failPending('the connector is closing');
  }

  private connect(settled: () => void = () => undefined): void {
    if (this.closed) return settled();
    const socket = net.createConnection({ host: this.options.host, port: this.options.port });
    this.socket = socket;
    socket.setNoDelay(true);
    socket.setKeepAlive(true, 10_000);
    const lines = new LineBuffer();
    socket.setEncoding('utf8');
    socket.once('connect', () => {
      this.connected = true;
      this.backoff.reset();
      settled();
      if (this.onReceive) this.channelOpened(socket);
    });
    socket.on('data', (chunk: string) => {
      for (const line of lines.push(chunk)) if (line.trim() !== '') this.handleLine(line);
      if (lines.pending > MAX_DAEMON_FRAME_BYTES) {
        this.options.onMalformed?.(`a line from the daemon exceeded ${MAX_DAEMON_FRAME_BYTES} bytes`);
        socket.destroy(new Error('line too long'));
      }
    });
    socket.on('error', () => undefined); // 'close' follows and says it
    socket.once('close', () => {
      const wasConnected = this.connected;
      this.connected = false;
      if (this.socket === socket) this.socket = undefined;
      this.requester.failPending(wasConnected ? 'the connection to the daemon was lost' : 'the daemon could not be reached');
      this.stopWatching();
      settled();
      if (this.closed) return;
      this.onState({ open: false, reason: wasConnected ? 'the connection to the daemon was lost' : 'the daemon could not be reached' });
      this.retryTimer = setTimeout(() => this.connect(), this.backoff.delay());
    });
  }

  /**
   * The channel is open once connected, and with `subscribe` once the daemon took the subscription
   * (else the connection is tried again). The accounts listed before subscribing are those it
   * covers; an account that appears later is subscribed on its own (watchAccounts).
   */
  private channelOpened(socket: net.Socket): void {
    if (!this.options.subscribe) return this.onState({ open: true });
    void (async () => {
      try {
        const before = numbersOfAccounts(await this.requester.call('listAccounts'));
        await this.requester.call('subscribeReceive');
        if (this.socket !== socket) return;
        this.covered = new Set(before);
        this.onState({ open: true });
        this.watchAccounts(socket);
      } catch (error) {
        this.options.onMalformed?.(`the daemon refused subscribeReceive: ${(error as Error).message}`);
        socket.destroy();
      }
    })();
  }

  /** Subscribes every account the daemon gained since, on its own, every `accountWatchMs`. */
  private watchAccounts(socket: net.Socket): void {
    this.stopWatching();
    let busy = false;
    this.watcher = setInterval(() => {
      if (busy || this.socket !== socket) return;
      busy = true;
      void (async () => {
        try {
          for (const account of numbersOfAccounts(await this.requester.call('listAccounts'))) {
            if (this.covered.has(account)) continue;
            await this.requester.call('subscribeReceive', { account });
            this.covered.add(account);
          }
        } catch {
          // The connection is going, or the account went again: the next round looks again.
        } finally {
          busy = false;
        }
      })();
    }, this.options.accountWatchMs ?? 5_000);
    this.watcher.unref();
  }

  private stopWatching(): void {
    if (this.watcher) clearInterval(this.watcher);
    this.watcher = undefined;
    this.covered = new Set();
  }

  private handleLine(line: string): void {
    let message: Line | Line[];
    try {
      message = JSON.parse(line) as Line | Line[];
    } catch {
      this.options.onMalformed?.('a line from the daemon was not JSON');
      return;
    }
    if (Array.isArray(message)) return this.requester.receive(message as JSONRPCResponse[]);
    if (message === null || typeof message !== 'object') return this.options.onMalformed?.('a line from the daemon was not a JSON-RPC message');
    if (typeof message.method === 'string') {
      if (message.method === 'receive') this.onReceive?.(receivedParams(message.params));
      return;
    }
    if ('result' in message || 'error' in message) return this.requester.receive(message as JSONRPCResponse);
    this.options.onMalformed?.('a line from the daemon was not a JSON-RPC message');
  }

  private write(payload: JSONRPCRequest | JSONRPCRequest[]): Promise<void> {
    const socket = this.socket;
    if (!socket || !this.connected) return Promise.reject(new Error('not connected to the daemon'));
    return new Promise((resolve, reject) => socket.write(`${JSON.stringify(payload)}\n`, (error) => (error ? reject(error) : resolve())));
  }
}
