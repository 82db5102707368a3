import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';

/**
 * How Relay's HTTP server answers what never reaches a route, and how it ends connections.
 *
 * Node's HTTP server closes a connection abruptly: after an answer marked `Connection: close`
 * it sends FIN and closes the socket as soon as the answer is flushed (`socket.destroySoon()`),
 * and Fastify's default answer to a request the HTTP parser rejects is written to the socket
 * followed at once by `socket.destroy()`. When the client is still sending (the rest of a body
 * nobody read, pipelined requests), the kernel answers those bytes with a reset, and a client
 * that gets the reset while writing loses the answer it was sent (ECONNRESET, EPIPE). Fastify's
 * answer also ignored answers in flight on the same connection (it could land in the middle of
 * the stream of answers to pipelined requests) and wrote a body after the headers of an answer
 * to HEAD. Here instead:
 *  - every connection the server ends is closed the lingering way: stop parsing requests, send
 *    FIN after what is queued, read and drop whatever the client still sends until it closes its
 *    side (or it has lingered too long: {@link LINGER_IDLE_MS}, {@link LINGER_MAX_MS}), then close;
 *  - a request the parser rejects is answered after the answers already in flight on its
 *    connection, in the shape of the area it was aimed at, without a body when it may be a HEAD,
 *    with `Connection: close`; a request whose body turns out unframeable gets its answer from
 *    its own route (the error reaches whoever reads the body), marked `Connection: close`;
 *  - an error about a body read whole (invalid JSON) or of moderate declared length (413) keeps
 *    the connection instead of closing it ({@link keepAliveAfterBodyError});
 *  - CONNECT (which Node would drop without a word), an unknown expectation and a missing Host
 *    are answered in the area's shape with the security headers;
 *  - a client that closes its side after its requests (FIN) still gets every answer.
 * Nothing is added per request (server.ts makes the Host test Node made itself); per connection,
 * one property is set; the rest runs on error paths only.
 */

/**
 * A closing connection goes on reading (and dropping) what the client still sends until the
 * client closes its side, for at most LINGER_MAX_MS after the FIN, and no longer than
 * LINGER_IDLE_MS after the last bytes it sent (as Apache and nginx linger).
 */
export const LINGER_IDLE_MS = 2_000;
export const LINGER_MAX_MS = 30_000;

/**
 * A body left unread by an answer given before it (413 with a declared length) is read past
 * and dropped, keeping the connection, up to this size; a longer one closes the connection.
 */
export const UNREAD_BODY_DRAIN_LIMIT = 8 * 1024 * 1024;

const JSON_TYPE = 'application/json; charset=utf-8';

const kClosing = Symbol('relay.closing');
const kFailed = Symbol('relay.clientError');

/** What Node's HTTP server keeps on its sockets (internal, stable since Node 12). */
interface ServerSocket extends Socket {
  [kClosing]?: boolean;
  [kFailed]?: boolean;
  parser?: { incoming?: IncomingMessage | null } | null;
  _httpMessage?: ServerResponse | null;
  _handle?: { reading?: boolean; readStart?: () => number } | null;
}

/**
 * Fastify asks to close the connection after any body error. When the whole body has been read
 * (invalid JSON, ...) there is no reason to; when an answer came before a body of declared,
 * moderate length (413), Node reads past the rest and the connection stays usable. Only a body
 * of unknown or excessive length (chunked over the limit) still closes it, the lingering way.
 * The header is set back to what the request asked for (the parser's keep-alive decision):
 * removing it would make Node write no Connection header at all.
 */
export const keepAliveAfterBodyError = (request: FastifyRequest, reply: FastifyReply, code: string | undefined) => {
  const socket = request.raw.socket as ServerSocket | null;
  // The connection is ending already (a later request on it could not be parsed).
  if (socket === null || socket[kFailed] || socket[kClosing]) return;
  const length = request.headers['content-length'];
  const drainable =
    code === 'FST_ERR_CTP_BODY_TOO_LARGE' && length !== undefined && /^\d{1,15}$/.test(length) && Number(length) <= UNREAD_BODY_DRAIN_LIMIT;
  if (request.raw.complete || drainable) reply.header('connection', reply.raw.shouldKeepAlive ? 'keep-alive' : 'close');
};

const noop = () => undefined;

/**
 * Stops the HTTP parser and drops whatever arrives from now on. The server hands reads to its
 * parser (in C++ when it has "consumed" the socket, else from its 'data' listener); a 'data'
 * listener of ours makes Node give reads back to JavaScript, where they are dropped. The server
 * may have stopped reading (a request body nobody read fills its buffer): reading restarts on
 * the handle, as Node's server does itself on resume, since the stream still counts a read as
 * pending from before the parser took the socket over and would not ask again.
 */
const stopParsing = (socket: ServerSocket) => {
  socket.removeAllListeners('data');
  // Node's server would act on the client's FIN itself (end the socket, or mark the last answer
  // as the last): the connection is ours to end from now on.
  for (const listener of socket.listeners('end')) if (listener.name === 'bound socketOnEnd') socket.off('end', listener as () => void);
  socket.on('data', noop);
  const handle = socket._handle;
  if (handle && handle.reading === false && typeof handle.readStart === 'function') {
    handle.reading = true;
    handle.readStart();
  }
  socket.resume();
  // A request the parser was still reading when the connection began to close (the body of a
  // pipelined request nobody reads) pauses the socket once its buffer is full: a closing socket
  // is resumed at once, or it would stop reading, and be reset once it lingered idle.
  socket.on('pause', () => process.nextTick(() => socket.resume()));
};

/**
 * Ends a connection without a reset: no more requests are parsed, FIN goes after what is
 * queued, what the client still sends is read and dropped, and the socket closes once the
 * client has closed its side too, or it lingered too long ({@link LINGER_IDLE_MS},
 * {@link LINGER_MAX_MS}).
 */
export const lingeringClose = (socket: Socket | Duplex) => {
  const s = socket as ServerSocket;
  if (s.destroyed || s[kClosing]) return;
  s[kClosing] = true;
  // A reset from the client while lingering is nothing to report (the listener Node's server
  // had may be gone: CONNECT sockets are handed over without it).
  s.on('error', noop);
  stopParsing(s);
  s.end();
  const destroyWhenSent = () => {
    if (s.writableFinished) s.destroy();
    else s.once('finish', () => s.destroy());
  };
  if (s.readableEnded) return destroyWhenSent();
  s.once('end', destroyWhenSent);
  const linger = () => {
    const idle = setTimeout(() => s.destroy(), LINGER_IDLE_MS).unref();
    const max = setTimeout(() => s.destroy(), LINGER_MAX_MS).unref();
    s.on('data', () => idle.refresh());
    s.once('close', () => {
      clearTimeout(idle);
      clearTimeout(max);
    });
  };
  if (s.writableFinished) linger();
  else s.once('finish', linger);
};

/** Node's HTTP server calls `socket.destroySoon()` after an answer marked Connection: close. */
function destroySoon(this: Socket) {
  lingeringClose(this);
}

/** The error's status and the interface-style words for it. */
const parseErrorAnswer = (code: string | undefined): { status: number; message: string } => {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'Request header fields too large' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'Request body too large' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'Request timeout' };
    default:
      return { status: 400, message: 'Bad request' };
  }
};

/**
 * The method and target of the request the parser rejected, when they are certainly known: the
 * request began at the start of the first read of its connection. Otherwise (a request after
 * others, or whose head came in several reads) the error's bytes may start anywhere in it.
 */
const requestLine = (error: { rawPacket?: unknown }, socket: Socket, incoming: IncomingMessage | null | undefined) => {
  const raw = error.rawPacket;
  if (!Buffer.isBuffer(raw) || incoming != null || socket.bytesRead !== raw.length) return undefined;
  const match = /^(?:\r?\n)*([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([^\s]*)/.exec(raw.subarray(0, 4096).toString('latin1'));
  return match ? { method: match[1]!, url: match[2]! } : undefined;
};

/**
 * Writes the answer to a request the parser rejected, straight to the socket. With the method
 * known and not HEAD it carries the area's JSON error; for HEAD, the headers alone; when the
 * method is not known, no body (`Content-Length: 0`), which reads right after HEAD and GET alike.
 */
const writeRawAnswer = (
  socket: Socket | Duplex,
  status: number,
  line: { method: string; url: string } | undefined,
  headers: ReadonlyArray<readonly [string, string]>,
  body: string,
) => {
  const lines = [`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}`];
  for (const [name, value] of headers) lines.push(`${name}: ${value}`);
  lines.push(`Date: ${new Date().toUTCString()}`, 'Connection: close');
  if (line === undefined) lines.push('Content-Length: 0');
  else lines.push(`Content-Type: ${JSON_TYPE}`, `Content-Length: ${Buffer.byteLength(body)}`);
  socket.write(`${lines.join('\r\n')}\r\n\r\n${line !== undefined && line.method !== 'HEAD' ? body : ''}`);
};

/**
 * Answers already in flight on the connection go first (each in its turn, as Node sends them);
 * then `answer` writes what the connection still owes, and the connection closes. The answer of
 * `broken` (a request whose body broke off) is told to close the connection itself.
 */
const afterAnswersInFlight = (s: ServerSocket, broken: IncomingMessage | undefined, answer: () => void) => {
  const settle = () => {
    if (s.destroyed || s[kClosing]) return;
    const inFlight = s._httpMessage;
    if (inFlight) {
      if (inFlight.req === broken && !inFlight.headersSent) inFlight.setHeader('connection', 'close');
      inFlight.once('finish', settle);
      return;
    }
    answer();
    lingeringClose(s);
  };
  settle();
};

/**
 * The framing error reaches whoever reads the request's body (Fastify's body reader answers 400
 * through the route's error handler), now or when one starts reading. The stream is destroyed
 * with the socket detached for the call: IncomingMessage.destroy() would otherwise destroy the
 * socket, and the answer with it.
 */
const failBody = (request: IncomingMessage, error: Error) => {
  const deliver = () => {
    if (request.destroyed) return;
    const holder = request as { socket: Socket | null };
    const socket = holder.socket;
    holder.socket = null;
    try {
      request.destroy(error);
    } finally {
      holder.socket = socket;
    }
  };
  if (request.listenerCount('error') > 0) {
    deliver();
    return;
  }
  const onListener = (event: string | symbol) => {
    if (event !== 'error') return;
    request.off('newListener', onListener);
    process.nextTick(deliver);
  };
  request.on('newListener', onListener);
};

export interface ConnectionGuard {
  /** Fastify's `clientErrorHandler`: the answer to what the HTTP parser rejects. */
  clientError(error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void;
  /** Registers the per-connection close, CONNECT and expectation handling on the server. */
  attach(server: Server): void;
  /** An answer before routing, through Node's response (which leaves out the body of an answer to HEAD). */
  answer(request: IncomingMessage, response: ServerResponse, status: number, message: string): void;
}

/**
 * `headers`: the security headers of every answer; `dashboardPrefixes`: the dashboard's path
 * prefixes, under which errors are `{ success: false, error }` (elsewhere `{ error }`).
 */
export const connectionGuard = (options: {
  log: Logger;
  headers: ReadonlyArray<readonly [string, string]>;
  dashboardPrefixes: readonly string[];
}): ConnectionGuard => {
  const { log, headers, dashboardPrefixes } = options;

  /** The error body in the shape of the area `url` is aimed at: the dashboard's or the public API's. */
  const errorBody = (url: string | undefined, message: string): string =>
    JSON.stringify(url !== undefined && dashboardPrefixes.some((prefix) => url.startsWith(prefix)) ? { success: false, error: message } : { error: message });

  const answer: ConnectionGuard['answer'] = (request, response, status, message) => {
    const body = errorBody(request.url, message);
    response.writeHead(status, { 'content-type': JSON_TYPE, 'content-length': Buffer.byteLength(body) });
    response.end(body);
  };

  const clientError: ConnectionGuard['clientError'] = (error, socket) => {
    const s = socket as ServerSocket;
    // The peer reset or the socket is gone: there is no one to answer.
    if (error.code === 'ECONNRESET' || s.destroyed || s[kClosing] || s[kFailed]) return;
    s[kFailed] = true;
    log.debug({ code: error.code, reason: error.message }, 'unparseable request');
    const incoming = s.parser?.incoming;
    // A request whose head was read and whose body broke off: its route answers it.
    const broken = incoming != null && !incoming.complete ? incoming : undefined;
    const line = broken ? undefined : requestLine(error, s, incoming);
    stopParsing(s);
    if (broken) failBody(broken, error);
    const { status, message } = parseErrorAnswer(error.code);
    afterAnswersInFlight(s, broken, () => {
      if (!broken) writeRawAnswer(s, status, line, headers, errorBody(line?.url, message));
    });
  };

  /**
   * A request with an Upgrade header (Relay serves none, so Node hands it to the routes as any
   * other) whose body the client broke off with its FIN: Node's parser, which treats what follows
   * an upgrade's head as no longer its own, reports no error at that FIN, so the route would wait
   * for the rest of the body for ever, and a graceful shutdown with it. It is failed here as Node
   * fails any other body that breaks off (clientError: the route answers, the connection closes).
   */
  const upgradeBrokenOff = (s: ServerSocket) => {
    const incoming = s.parser?.incoming;
    if (!incoming || incoming.complete || incoming.headers.upgrade === undefined) return;
    clientError(Object.assign(new Error('Parse Error: the body of an upgrade request broke off'), { code: 'HPE_INVALID_EOF_STATE' }), s);
  };

  const attach = (server: Server) => {
    // A client that sends its requests and then closes its side (FIN) still gets every answer:
    // Node's default ends the connection at the FIN, dropping the answers of routes that were not
    // done yet. Half-open, the answer in flight last closes the connection once it is sent.
    (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
    server.on('connection', (socket: Socket) => {
      (socket as { destroySoon(): void }).destroySoon = destroySoon;
      socket.once('end', () => upgradeBrokenOff(socket as ServerSocket));
    });
    // A CONNECT request (a tunnel) is not served: Node would drop the connection without an answer.
    // Pipelined after other requests, it is answered after theirs (found by the HTTP fuzz, seed 429269063).
    server.on('connect', (request: IncomingMessage, socket: Duplex) => {
      const s = socket as ServerSocket;
      afterAnswersInFlight(s, undefined, () => writeRawAnswer(s, 404, { method: 'CONNECT', url: request.url ?? '' }, headers, errorBody(request.url, 'Not found')));
    });
    // An expectation other than 100-continue: 417, as Node answers it, but in the area's shape.
    // (The response is the server's own kind, which writes the security headers: server.ts.)
    server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
      answer(request, response, 417, 'Expectation failed');
    });
  };

  return { clientError, attach, answer };
};
