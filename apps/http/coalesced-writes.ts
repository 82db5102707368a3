import { Socket } from 'node:net';

type Callback = (error?: Error | null) => void;
type Chunks = Array<{ chunk: unknown; encoding: BufferEncoding }>;

/** The socket's own writes, as its stream calls them once it has something to send. */
const { _writev: socketWritev, _write: socketWrite } = Socket.prototype as unknown as {
  _writev: (this: Socket, chunks: Chunks, callback: Callback) => void;
  _write: (this: Socket, chunk: unknown, encoding: BufferEncoding, callback: Callback) => void;
};

/** A write held back: what the socket's stream asked to send, sent as it asked once let go. */
interface Held {
  readonly socket: Socket;
  /** Several chunks (`_writev`), or undefined for one (`_write`). */
  readonly chunks: Chunks | undefined;
  readonly chunk: unknown;
  readonly encoding: BufferEncoding;
  readonly callback: Callback;
}

/** At most this many writes are held at once: past it they are sent at once, so no answer waits behind an unbounded batch. */
export const MAX_HELD_WRITES = 128;

export interface CoalescedWrites {
  /** Makes a connection's writes go through the coalescer (call once per socket, on `connection`). */
  attach(socket: Socket): void;
  /**
   * Runs the request listener `handler`: what it writes meanwhile (an answer given at once) is
   * held until the event loop has read the requests of every connection that was ready, then
   * sent with them; the first such answer of a turn goes out at once. Writes made anywhere else
   * (answers given after a commit, event streams) go out at once, as before.
   */
  during<A, B>(handler: (a: A, b: B) => void, a: A, b: B): void;
}

/**
 * Answers written together at the end of the event loop's turn, one system call per connection
 * as before, instead of each one as soon as its request is handled.
 *
 * A client on the same machine (a bot beside Relay, or a load generator) is woken by the kernel
 * inside the server's own `write` when its answer arrives: answering 50 connections one after
 * the other woke it 50 times, each time on another core that had gone idle, and the server
 * paid for those wake-ups in every `writev` (docs/performance.md, session 25). Held to the end
 * of the turn, the answers reach the client together: it wakes once, answers them all, and the
 * server reads the next requests together too. It is the write coalescing of uWebSockets
 * (corked per turn of the loop) and Netty's flush consolidation.
 *
 * The first answer of a turn goes out at once: a lone request (a client at a time) waits for
 * nothing, and holding it too cost 6 % of the rate of one connection's health checks. What it
 * costs: any other answer given at once waits, at most, for the rest of its turn (the requests
 * of the other connections that were ready with it, at most {@link MAX_HELD_WRITES} writes).
 * Each socket's stream still sends its bytes in order: while a write is held the stream counts
 * it as in progress, and queues any later one behind it. A socket closed meanwhile gets its
 * write refused by Node (no handle), as a write to a closed socket always is.
 */
export const coalescedWrites = (options: { readonly maxHeld?: number } = {}): CoalescedWrites => {
  const maxHeld = options.maxHeld ?? MAX_HELD_WRITES;
  let held: Held[] = [];
  /** Whether an answer has gone out in this turn: the end of the turn is then scheduled. */
  let turnStarted = false;
  /** How deep in request listeners the thread is: an answer of a pipelined request may start one inside another. */
  let depth = 0;

  const sendHeld = (): void => {
    const batch = held;
    held = [];
    for (const write of batch) {
      if (write.chunks !== undefined) socketWritev.call(write.socket, write.chunks, write.callback);
      else socketWrite.call(write.socket, write.chunk, write.encoding, write.callback);
    }
  };
  const endOfTurn = (): void => {
    turnStarted = false;
    sendHeld();
  };
  /** True when the write is to be held; the first of a turn goes out at once, and marks the turn. */
  const holds = (): boolean => {
    if (depth === 0) return false;
    if (!turnStarted) {
      turnStarted = true;
      setImmediate(endOfTurn);
      return false;
    }
    return true;
  };
  const hold = (write: Held): void => {
    held.push(write);
    if (held.length >= maxHeld) sendHeld();
  };

  // Functions of the module's closure, shared by every socket (not made per connection).
  function writev(this: Socket, chunks: Chunks, callback: Callback): void {
    if (!holds()) return socketWritev.call(this, chunks, callback);
    hold({ socket: this, chunks, chunk: undefined, encoding: 'utf8', callback });
  }
  function write(this: Socket, chunk: unknown, encoding: BufferEncoding, callback: Callback): void {
    if (!holds()) return socketWrite.call(this, chunk, encoding, callback);
    hold({ socket: this, chunks: undefined, chunk, encoding, callback });
  }

  return {
    attach: (socket) => {
      const s = socket as unknown as { _writev: typeof writev; _write: typeof write };
      s._writev = writev;
      s._write = write;
    },
    during: (handler, a, b) => {
      depth += 1;
      try {
        handler(a, b);
      } finally {
        depth -= 1;
      }
    },
  };
};
