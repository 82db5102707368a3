/**
 * simplex-chat's WebSocket API (`simplex-chat -p 5225`): a command is a text frame
 * `{"corrId","cmd"}`, its answer `{"corrId","resp":{"type",…}}`, and events come as
 * `{"resp":{…}}` without a corrId (docs/messengers.md). One long-lived connection, opened again
 * with back-off when lost; commands while it is down fail at once as unavailable; a frame that is
 * not JSON, or not of that shape, is reported and skipped.
 */
import WebSocket from 'ws';
import { UnavailableError } from '../../errors/unavailable.ts';
import { Backoff } from '../../net/backoff.ts';

/** A response or event of simplex-chat: its `type` and whatever else it carries. */
export type SimplexResponse = { readonly type: string } & Record<string, unknown>;

/** simplex-chat answered a command with `chatCmdError`. */
export class SimplexCommandError extends Error {
  override readonly name = 'SimplexCommandError';

  constructor(
    readonly chatError: unknown,
    readonly command: string,
  ) {
    super(`simplex-chat refused ${command.split(' ')[0]}: ${SimplexCommandError.describe(chatError)}`);
  }

  /** The error's kind, e.g. `errorStore/contactNotFound` or `error/contactNotReady`. */
  get kind(): string {
    return SimplexCommandError.describe(this.chatError);
  }

  static describe(chatError: unknown): string {
    const e = (chatError ?? {}) as { type?: unknown; errorType?: { type?: unknown }; storeError?: { type?: unknown }; agentError?: { type?: unknown } };
    const inner = e.errorType ?? e.storeError ?? e.agentError;
    return `${String(e.type ?? 'unknown')}/${String(inner?.type ?? 'unknown')}`;
  }
}

export class SimplexUnavailableError extends UnavailableError {
  override readonly name = 'SimplexUnavailableError';
}

export type ChannelState = { readonly open: true } | { readonly open: false; readonly reason: string };

/** Largest frame accepted from simplex-chat. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024;

export interface SimplexClientOptions {
  /** `ws://127.0.0.1:5225` */
  readonly url: string;
  readonly timeoutMs: number;
  readonly reconnect?: { readonly minMs: number; readonly maxMs: number };
  readonly onEvent: (event: SimplexResponse) => void;
  readonly onState?: (state: ChannelState) => void;
  readonly onMalformed?: (reason: string) => void;
}

type Pending = { resolve: (response: SimplexResponse) => void; reject: (error: Error) => void; timer: NodeJS.Timeout; command: string };

export class SimplexClient {
  private socket: WebSocket | undefined;
  private open = false;
  private closed = false;
  private nextCorrId = 1;
  private readonly pending = new Map<string, Pending>();
  private readonly backoff: Backoff;
  private retryTimer: NodeJS.Timeout | undefined;
  private firstConnection: Promise<void> | undefined;
  private opened = 0;

  constructor(private readonly options: SimplexClientOptions) {
    this.backoff = new Backoff(options.reconnect?.minMs ?? 500, options.reconnect?.maxMs ?? 30_000);
  }

  /** Opens the connection and keeps it open; resolves once the first attempt connected or failed. */
  start(): Promise<void> {
    this.firstConnection ??= new Promise((resolve) => this.connect(resolve));
    return this.firstConnection;
  }

  get connected(): boolean {
    return this.open;
  }

  /** How many times the connection was opened (a new one may be a restarted simplex-chat). */
  get connections(): number {
    return this.opened;
  }

  /** Sends `cmd` and resolves with its response; rejects with SimplexCommandError or SimplexUnavailableError. */
  async command(cmd: string, timeoutMs = this.options.timeoutMs): Promise<SimplexResponse> {
    await this.start();
    const socket = this.socket;
    if (!socket || !this.open) throw new SimplexUnavailableError('simplex-chat unavailable: not connected');
    const corrId = String(this.nextCorrId++);
    return new Promise<SimplexResponse>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(corrId);
        reject(new SimplexUnavailableError(`simplex-chat unavailable: no answer within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(corrId, { resolve, reject, timer, command: cmd });
      socket.send(JSON.stringify({ corrId, cmd }), (error) => {
        if (!error) return;
        clearTimeout(timer);
        this.pending.delete(corrId);
        reject(new SimplexUnavailableError(`simplex-chat unavailable: ${error.message}`));
      });
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.failPending('the connector is closing');
    this.socket?.terminate();
  }

  private failPending(reason: string): void {
    for (const [corrId, p] of this.pending) {
      clearTimeout(p.timer);
      p.reject(new SimplexUnavailableError(`simplex-chat unavailable: ${reason}`));
      this.pending.delete(corrId);
    }
  }

  private connect(settled: () => void = () => undefined): void {
    if (this.closed) return settled();
    const socket = new WebSocket(this.options.url, { maxPayload: MAX_FRAME_BYTES, handshakeTimeout: this.options.timeoutMs });
    this.socket = socket;
    socket.on('open', () => {
      this.open = true;
      this.opened++;
      this.backoff.reset();
      settled();
      this.options.onState?.({ open: true });
    });
    socket.on('message', (data, isBinary) => this.onFrame(isBinary ? undefined : data.toString()));
    socket.on('error', () => undefined); // 'close' follows and says it
    socket.on('close', () => {
      const wasOpen = this.open;
      this.open = false;
      if (this.socket === socket) this.socket = undefined;
      const reason = wasOpen ? 'the connection to simplex-chat was lost' : 'simplex-chat could not be reached';
      this.failPending(reason);
      settled();
      if (this.closed) return;
      this.options.onState?.({ open: false, reason });
      this.retryTimer = setTimeout(() => this.connect(), this.backoff.delay());
    });
  }

  private onFrame(text: string | undefined): void {
    let frame: { corrId?: unknown; resp?: unknown };
    try {
      if (text === undefined) throw new Error('binary');
      frame = JSON.parse(text) as typeof frame;
    } catch {
      return this.options.onMalformed?.('a frame from simplex-chat was not JSON text');
    }
    const resp = frame?.resp as SimplexResponse | undefined;
    if (!resp || typeof resp !== 'object' || typeof resp.type !== 'string') return this.options.onMalformed?.('a frame from simplex-chat had no resp.type');
    if (typeof frame.corrId !== 'string') return this.options.onEvent(resp);
    const waiting = this.pending.get(frame.corrId);
    if (!waiting) return; // answered after its timeout
    this.pending.delete(frame.corrId);
    clearTimeout(waiting.timer);
    if (resp.type === 'chatCmdError') waiting.reject(new SimplexCommandError(resp.chatError, waiting.command));
    else waiting.resolve(resp);
  }
}
