import type { FastifyReply } from 'fastify';

/** A Server-Sent Events response on the raw socket, written in order with backpressure. */
export interface SseResponse {
  /** Queues text for the socket. False when the queue would pass its bound (the caller ends the stream) or the stream is ending. */
  send(text: string): boolean;
  /** Resolves once everything queued so far has been handed to the socket (or the stream closed). */
  drained(): Promise<void>;
  /** The stream is closed or ending: nothing more can be sent. */
  readonly closed: boolean;
  onClose(run: () => void): void;
  /** Ends the response after what is queued, with a last comment line saying why. */
  end(why?: string): void;
}

export interface SseOptions {
  /** Bytes queued for a slow reader before the stream is given up (it resumes with Last-Event-ID). */
  readonly maxQueuedBytes: number;
  readonly heartbeatMs: number;
}

/**
 * Opens the response: the headers Fastify would have sent (security headers) plus the SSE ones,
 * a reconnect delay, and a comment line every `heartbeatMs` so that proxies keep it open. What is
 * queued goes to the socket as fast as the reader takes it; a reader that falls more than
 * `maxQueuedBytes` behind is not buffered without end: `send` says so and the caller ends it.
 */
export const openSse = (reply: FastifyReply, options: SseOptions): SseResponse => {
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    // No Connection header of our own: Node keeps the connection as the client asked (a client's
    // `Connection: close` is honoured when the stream ends).
    'x-accel-buffering': 'no',
  });
  raw.write('retry: 2000\n\n');

  let closed = false;
  /** end() was called: nothing more is queued, what is queued is still written. */
  let ending = false;
  let queuedBytes = 0;
  const queue: string[] = [];
  let writing = false;
  const closers: Array<() => void> = [];
  let drainWaiters: Array<() => void> = [];

  const settleDrained = () => {
    if (queue.length > 0 || writing) return;
    const waiters = drainWaiters;
    drainWaiters = [];
    for (const resolve of waiters) resolve();
  };

  const pump = () => {
    while (!closed && queue.length > 0) {
      const text = queue.shift()!;
      queuedBytes -= Buffer.byteLength(text);
      if (!raw.write(text)) {
        writing = true;
        raw.once('drain', () => {
          writing = false;
          pump();
        });
        return;
      }
    }
    settleDrained();
  };

  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(heartbeat);
    queue.length = 0;
    queuedBytes = 0;
    writing = false;
    settleDrained();
    for (const run of closers.splice(0)) run();
  };
  raw.on('close', close);
  // The server is half-open (apps/http/connections.ts): a client that closes its side (FIN) reads
  // no more, and the stream would otherwise stay open (and counted) until a write failed.
  const socket = raw.socket;
  const onClientEnd = () => {
    close();
    raw.end();
  };
  socket?.once('end', onClientEnd);
  closers.push(() => socket?.off('end', onClientEnd));
  const heartbeat = setInterval(() => {
    if (!writing && queue.length === 0) raw.write(': keep-alive\n\n');
  }, options.heartbeatMs);
  heartbeat.unref();

  return {
    send(text) {
      if (closed || ending) return false;
      if (text === '') return true;
      const bytes = Buffer.byteLength(text);
      if (queuedBytes + bytes > options.maxQueuedBytes && queuedBytes > 0) return false;
      queue.push(text);
      queuedBytes += bytes;
      if (!writing) pump();
      return true;
    },
    drained: () => (closed || (queue.length === 0 && !writing) ? Promise.resolve() : new Promise<void>((resolve) => drainWaiters.push(resolve))),
    get closed() {
      return closed || ending;
    },
    onClose(run) {
      if (closed) run();
      else closers.push(run);
    },
    end(why) {
      if (closed || ending) return;
      ending = true;
      if (why !== undefined) queue.push(`: ${why}\n\n`);
      void (async () => {
        if (!writing) pump();
        await new Promise<void>((resolve) => (queue.length === 0 && !writing ? resolve() : drainWaiters.push(resolve)));
        close();
        raw.end();
      })();
    },
  };
};
