/**
 * A protocol-faithful fake of signal-cli's daemon (0.13.19, multi-account mode) for what the real
 * one cannot do here: accounts, sends and received messages need Signal's servers. Written from
 * signal-cli's JSON-RPC documentation (man/signal-cli-jsonrpc.5.adoc) and the answers recorded
 * from the real daemon (../shared/notes/messenger-daemons.md), which the real-daemon suite checks:
 * - HTTP: `POST /api/v1/rpc` (one call or a batch; a notification gets 201 and no body; a body that
 *   is not JSON gets error -32700 with id null), `GET /api/v1/events` (Server-Sent Events whose
 *   headers are only written with the first event or keep-alive comment; a stream covers its
 *   `?account=`, else the accounts there were when it opened, as the real daemon's does),
 *   `GET /api/v1/check`.
 * - TCP: one JSON message per line, answers in any order, `receive` notifications on each socket.
 * - Errors: -32602 `Method requires valid account parameter` / `Specified account does not exist`,
 *   -32601 `Method not implemented`; a send answers `{ results: [{ recipientAddress, type }], timestamp }`.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { LineBuffer } from '../../infra/net/line-buffer.ts';
import { FakeSignalGroups } from './fake-signal-groups.ts';

export type SendResultType = 'SUCCESS' | 'NETWORK_FAILURE' | 'UNREGISTERED_FAILURE' | 'IDENTITY_FAILURE' | 'RATE_LIMIT_FAILURE';

export interface SentMessage {
  readonly account: string;
  readonly recipient?: readonly string[];
  readonly groupId?: string;
  readonly message: string;
  readonly timestamp: number;
}

export interface FakeSignalCliOptions {
  /** Milliseconds between the SSE stream's keep-alive comments (the real daemon: 15,000). */
  readonly keepAliveMs?: number;
  /** Answers on TCP are delayed by up to this many milliseconds each, so that they come back out of order. */
  readonly shuffleMs?: number;
  /**
   * `--receive-mode`: with `on-start` (the default) a message goes to whoever listens and is lost
   * when nobody does (signal-cli 0.13 has acknowledged it to Signal); with `manual` only TCP
   * connections that called `subscribeReceive` get messages, and while there is none they wait
   * (on Signal's servers, in the real world).
   */
  readonly receiveMode?: 'on-start' | 'manual';
  /** startLink answers after this many milliseconds (a daemon that asks Signal's servers first). */
  readonly startLinkDelayMs?: number;
}

type Request = { jsonrpc?: unknown; id?: unknown; method?: unknown; params?: Record<string, unknown> };

const error = (id: unknown, code: number, message: string) => ({ jsonrpc: '2.0', error: { code, message, data: null }, id: id ?? null });
const success = (id: unknown, result: unknown) => ({ jsonrpc: '2.0', result, id });

export class FakeSignalCli {
  readonly sent: SentMessage[] = [];
  /** The accounts' groups (fake-signal-groups.ts). */
  readonly groups = new FakeSignalGroups();
  private readonly accounts = new Set<string>();
  private readonly failures = new Map<string, SendResultType[]>();
  private readonly callErrors: Array<{ code: number; message: string }> = [];
  /** Errors for the next calls of one method. */
  private readonly methodErrors = new Map<string, Array<{ code: number; message: string }>>();
  /** How many times each method was called. */
  private readonly calls = new Map<string, number>();
  /** Each event stream with the accounts it covers: its `?account=`, else the accounts there were when it opened. */
  private readonly sseClients = new Map<http.ServerResponse, ReadonlySet<string>>();
  private readonly tcpClients = new Set<net.Socket>();
  /** Manual receive mode: each subscribed connection, and the accounts its subscriptions cover. */
  private readonly subscribed = new Map<net.Socket, Set<string>>();
  /** Messages waiting for a subscription that covers their account (manual receive mode). */
  private readonly waiting: Array<{ envelope: Record<string, unknown>; account: string }> = [];
  /** finishLink calls waiting for a phone to scan their URI. */
  private readonly links = new Map<string, (account: string) => void>();
  /** Messages nobody received (on-start receive mode with no listener). */
  lost = 0;
  private readonly httpServer: http.Server;
  private readonly tcpServer: net.Server;
  private clock = 1_700_000_000_000;
  /** Listeners that ever connected (SSE streams and TCP sockets). */
  connections = 0;
  httpUrl = '';
  tcpPort = 0;

  constructor(private readonly options: FakeSignalCliOptions = {}) {
    this.httpServer = http.createServer((req, res) => this.onHttp(req, res));
    this.tcpServer = net.createServer((socket) => this.onTcp(socket));
  }

  async start(): Promise<this> {
    await new Promise<void>((resolve) => this.httpServer.listen(0, '127.0.0.1', resolve));
    await new Promise<void>((resolve) => this.tcpServer.listen(0, '127.0.0.1', resolve));
    this.httpUrl = `http://127.0.0.1:${(this.httpServer.address() as net.AddressInfo).port}`;
    this.tcpPort = (this.tcpServer.address() as net.AddressInfo).port;
    return this;
  }

  addAccount(number: string): void {
    this.accounts.add(number);
  }

  removeAccount(number: string): void {
    this.accounts.delete(number);
  }

  /** The next sends to `recipient` (a number, uuid or `u:username`) get these result types, in order. */
  failSendsTo(recipient: string, ...types: SendResultType[]): void {
    this.failures.set(recipient, [...(this.failures.get(recipient) ?? []), ...types]);
  }

  /** The next call of any method is answered with this error. */
  failNextCall(code: number, message: string): void {
    this.callErrors.push({ code, message });
  }

  /** The next call of `method` is answered with this error (other methods are answered as usual). */
  failNextCallOf(method: string, code: number, message: string): void {
    this.methodErrors.set(method, [...(this.methodErrors.get(method) ?? []), { code, message }]);
  }

  /** How many times `method` was called so far. */
  callsOf(method: string): number {
    return this.calls.get(method) ?? 0;
  }

  private counted(method: string): void {
    this.calls.set(method, this.callsOf(method) + 1);
  }

  /** As if a contact's message reached `account`: a `receive` notification to every listener. */
  receive(account: string, envelope: Record<string, unknown>): void {
    const params = { envelope, account };
    if (this.options.receiveMode === 'manual') {
      // As signal-cli 0.13.19: a subscription without an account covers the accounts there were when it was made.
      const covering = [...this.subscribed].filter(([, accounts]) => accounts.has(account)).map(([socket]) => socket);
      if (covering.length === 0) return void this.waiting.push(params);
      for (const socket of covering) socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'receive', params: { subscription: 0, result: params } })}\n`);
      return;
    }
    if (this.listeners === 0) this.lost++;
    // As signal-cli 0.13.19: an event stream does not cover an account linked or registered after it opened.
    for (const [res, covered] of this.sseClients) if (covered.has(account)) res.write(`event:receive\ndata:${JSON.stringify(params)}\n\n`);
    for (const socket of this.tcpClients) socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'receive', params })}\n`);
  }

  /** Writes raw bytes to every listener (malformed frames). */
  writeRaw(sse: string, tcp: string): void {
    for (const res of this.sseClients.keys()) res.write(sse);
    for (const socket of this.tcpClients) socket.write(tcp);
  }

  /**
   * Ends every open connection (a daemon restart, a network cut). They stop counting as listeners
   * at once, not when their 'close' events come: a test waiting for Relay to listen again must not
   * see the connections it just cut.
   */
  dropConnections(): void {
    for (const res of this.sseClients.keys()) res.socket?.destroy();
    for (const socket of this.tcpClients) socket.destroy();
    this.sseClients.clear();
    this.tcpClients.clear();
    this.subscribed.clear();
    this.httpServer.closeAllConnections();
  }

  /** Whether a message to `account` reaches a listener now (an event stream that covers it, or a TCP client). */
  hears(account: string): boolean {
    if (this.options.receiveMode === 'manual') return [...this.subscribed.values()].some((accounts) => accounts.has(account));
    return this.tcpClients.size > 0 || [...this.sseClients.values()].some((covered) => covered.has(account));
  }

  /** The link URIs whose finishLink waits for a phone. */
  get pendingLinks(): string[] {
    return [...this.links.keys()];
  }

  /** As if a phone of `account` scanned the link URI: the account joins the daemon and finishLink answers. */
  scan(uri: string, account: string): void {
    const finish = this.links.get(uri);
    if (!finish) throw new Error(`no finishLink waits for ${uri}`);
    this.links.delete(uri);
    this.accounts.add(account);
    finish(account);
  }

  get listeners(): number {
    return this.sseClients.size + this.tcpClients.size;
  }

  async close(): Promise<void> {
    this.dropConnections();
    await Promise.all([new Promise((r) => this.httpServer.close(r)), new Promise((r) => this.tcpServer.close(r))]);
  }

  /** Answers that come later (finishLink waits for the phone). */
  private answerLater(request: Request): Promise<object> | undefined {
    const delay = this.options.startLinkDelayMs ?? 0;
    if (request?.method === 'startLink' && delay > 0) return new Promise((resolve) => setTimeout(() => resolve(this.answer(request) ?? {}), delay));
    if (request?.method !== 'finishLink') return undefined;
    this.counted('finishLink');
    const uri = String(request.params?.deviceLinkUri ?? '');
    return new Promise((resolve) => this.links.set(uri, (account) => resolve(success(request.id, { number: account }))));
  }

  private answer(request: Request, socket?: net.Socket): object | undefined {
    if (typeof request !== 'object' || request === null || typeof request.method !== 'string') return error(request?.id, -32600, 'method field must be set');
    this.counted(request.method);
    const injected = this.methodErrors.get(request.method)?.shift() ?? this.callErrors.shift();
    const reply = (body: object) => (request.id === undefined ? undefined : body);
    if (injected) return reply(error(request.id, injected.code, injected.message));
    const params = request.params ?? {};
    switch (request.method) {
      case 'version':
        return reply(success(request.id, { version: '0.13.19' }));
      case 'subscribeReceive':
        if (socket) {
          // Without an account: the accounts there are now (not those linked or registered later); with one: that one.
          if (typeof params.account === 'string' && !this.accounts.has(params.account)) return reply(error(request.id, -32602, 'Specified account does not exist'));
          const covered = this.subscribed.get(socket) ?? new Set<string>();
          for (const account of typeof params.account === 'string' ? [params.account] : this.accounts) covered.add(account);
          this.subscribed.set(socket, covered);
          // The waiting messages of the accounts it covers follow the answer.
          setImmediate(() => {
            const due = this.waiting.filter((w) => covered.has(w.account));
            this.waiting.splice(0, this.waiting.length, ...this.waiting.filter((w) => !covered.has(w.account)));
            for (const params of due) socket.write(`${JSON.stringify({ jsonrpc: '2.0', method: 'receive', params: { subscription: 0, result: params } })}\n`);
          });
        }
        return reply(success(request.id, 0));
      case 'startLink':
        return reply(success(request.id, { deviceLinkUri: `sgnl://linkdevice?uuid=${randomUUID()}&pub_key=BQ${'A'.repeat(42)}` }));
      case 'listAccounts':
        return reply(success(request.id, [...this.accounts].map((number) => ({ number }))));
      case 'send': {
        if (typeof params.account !== 'string') return reply(error(request.id, -32602, 'Method requires valid account parameter'));
        if (!this.accounts.has(params.account)) return reply(error(request.id, -32602, 'Specified account does not exist'));
        const recipients = params.recipient === undefined ? [] : ([] as string[]).concat(params.recipient as string | string[]);
        const timestamp = ++this.clock;
        this.sent.push({
          account: params.account,
          ...(recipients.length ? { recipient: recipients } : {}),
          ...(typeof params.groupId === 'string' ? { groupId: params.groupId } : {}),
          message: String(params.message ?? ''),
          timestamp,
        });
        const targets = recipients.length ? recipients : [`group:${String(params.groupId)}`];
        const results = targets.map((target) => {
          const queued = this.failures.get(target);
          const type = queued?.shift() ?? 'SUCCESS';
          const number = target.startsWith('+') ? target : null;
          return { recipientAddress: { uuid: randomUUID(), number, username: null }, ...(typeof params.groupId === 'string' ? { groupId: params.groupId } : {}), type };
        });
        return reply(success(request.id, { results, timestamp }));
      }
      case 'updateGroup':
      case 'listGroups': {
        if (typeof params.account !== 'string') return reply(error(request.id, -32602, 'Method requires valid account parameter'));
        if (!this.accounts.has(params.account)) return reply(error(request.id, -32602, 'Specified account does not exist'));
        const answer = request.method === 'updateGroup' ? this.groups.updateGroup(params.account, params) : this.groups.listGroups(params.account, params);
        return reply('error' in answer ? error(request.id, answer.error.code, answer.error.message) : success(request.id, answer.result));
      }
      default:
        return reply(error(request.id, -32601, 'Method not implemented'));
    }
  }

  private laterAnswer(text: string): Promise<object> | undefined {
    try {
      return this.answerLater(JSON.parse(text) as Request);
    } catch {
      return undefined;
    }
  }

  private answerPayload(text: string, socket?: net.Socket): object | undefined {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return error(null, -32700, `Unrecognized token: was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')`);
    }
    if (Array.isArray(parsed)) return parsed.map((r) => this.answer(r as Request, socket)).filter((a) => a !== undefined);
    return this.answer(parsed as Request, socket);
  }

  private onHttp(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    if (url.pathname === '/api/v1/check' && req.method === 'GET') return void res.writeHead(200).end();
    if (url.pathname === '/api/v1/events' && req.method === 'GET') {
      const account = url.searchParams.get('account');
      if (account !== null && !this.accounts.has(account)) return void res.writeHead(400).end();
      // Like signal-cli: the status line and headers go out with the first write only.
      res.statusCode = 200;
      res.setHeader('content-type', 'text/event-stream');
      this.sseClients.set(res, new Set(account !== null ? [account] : this.accounts.keys()));
      this.connections++;
      const timer = setInterval(() => res.write(':\n\n'), this.options.keepAliveMs ?? 15_000);
      res.on('close', () => {
        clearInterval(timer);
        this.sseClients.delete(res);
      });
      return;
    }
    if (url.pathname !== '/api/v1/rpc') return void res.writeHead(404).end();
    if (req.method !== 'POST') return void res.writeHead(405).end();
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const later = this.laterAnswer(text);
      if (later) {
        void later.then((answer) => {
          const body = JSON.stringify(answer);
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
        });
        return;
      }
      const answer = this.answerPayload(text);
      if (answer === undefined || (Array.isArray(answer) && answer.length === 0)) return void res.writeHead(201).end();
      const body = JSON.stringify(answer);
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
    });
  }

  private onTcp(socket: net.Socket): void {
    this.tcpClients.add(socket);
    this.connections++;
    socket.on('close', () => {
      this.tcpClients.delete(socket);
      this.subscribed.delete(socket);
    });
    socket.on('error', () => undefined);
    const lines = new LineBuffer();
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      for (const line of lines.push(chunk)) {
        const later = this.laterAnswer(line);
        if (later) {
          void later.then((answer) => socket.writable && socket.write(`${JSON.stringify(answer)}\n`));
          continue;
        }
        const answer = this.answerPayload(line, socket);
        if (answer === undefined) continue;
        const delay = Math.floor(Math.random() * (this.options.shuffleMs ?? 0));
        setTimeout(() => socket.writable && socket.write(`${JSON.stringify(answer)}\n`), delay);
      }
    });
  }
}

/** A direct message envelope as signal-cli 0.13.19 writes it. */
export const directEnvelope = (source: { number?: string; uuid: string }, text: string, timestamp: number) => ({
  source: source.number ?? source.uuid,
  sourceNumber: source.number ?? null,
  sourceUuid: source.uuid,
  sourceName: 'A contact',
  sourceDevice: 1,
  timestamp,
  dataMessage: { timestamp, message: text, expiresInSeconds: 0, viewOnce: false },
});

/** A group message envelope: `dataMessage.groupInfo.groupId`. */
export const groupEnvelope = (source: { number?: string; uuid: string }, groupId: string, text: string, timestamp: number) => {
  const envelope = directEnvelope(source, text, timestamp);
  return { ...envelope, dataMessage: { ...envelope.dataMessage, groupInfo: { groupId, type: 'DELIVER' } } };
};

/** A group change (a member joined, left, was made admin…) as signal-cli hands it to the group's members: `groupInfo.type` `UPDATE`, no text. */
export const groupUpdateEnvelope = (source: { number?: string; uuid: string }, groupId: string, timestamp: number) => {
  const envelope = directEnvelope(source, '', timestamp);
  return { ...envelope, dataMessage: { timestamp, message: null, expiresInSeconds: 0, viewOnce: false, groupInfo: { groupId, groupName: 'Support bot', revision: 2, type: 'UPDATE' } } };
};
