import net from 'node:net';

/**
 * A raw HTTP/1.1 client over node:net for tests that must see exactly what the server writes:
 * responses are parsed strictly (status line, header syntax, one framing per response), so a
 * body after a HEAD answer, a missing or wrong length, garbage between responses or a reset
 * shows up instead of being smoothed over by a forgiving client.
 */

export interface RawResponse {
  status: number;
  reason: string;
  /** Header names in lower case, in the order received. */
  headers: Array<[string, string]>;
  body: Buffer;
  /** Interim (1xx) statuses received before this response. */
  interim: number[];
  /** The body ran until the server closed (no Content-Length, no chunked coding). */
  closeDelimited: boolean;
}

export const header = (res: RawResponse, name: string): string | undefined => {
  const values = res.headers.filter(([n]) => n === name).map(([, v]) => v);
  return values.length === 0 ? undefined : values.join(', ');
};

/** The server said it closes the connection after this response. */
export const closesAfter = (res: RawResponse) => /(^|,)\s*close\s*(,|$)/i.test(header(res, 'connection') ?? '');

export class MisframedError extends Error {
  override name = 'MisframedError';
}

const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const MAX_HEAD = 64 * 1024;

/** Incremental strict parser of a stream of HTTP/1.1 responses. */
export class ResponseParser {
  private buffer: Buffer = Buffer.alloc(0);
  private interim: number[] = [];

  push(data: Buffer) {
    this.buffer = this.buffer.length === 0 ? data : Buffer.concat([this.buffer, data]);
  }

  /** Bytes received and not yet part of a parsed response. */
  get pending(): Buffer {
    return this.buffer;
  }

  /**
   * The next complete response (to a request whose method was `method`), undefined when more
   * bytes are needed; throws MisframedError when the bytes cannot be a response. With `eof`,
   * the server has closed: a close-delimited body ends here.
   */
  next(method: string, eof = false): RawResponse | undefined {
    for (;;) {
      const head = this.parseHead();
      if (head === undefined) {
        if (eof && this.buffer.length > 0) throw new MisframedError(`connection closed within a response head: ${preview(this.buffer)}`);
        return undefined;
      }
      const { status, reason, headers, size } = head;
      if (status >= 100 && status < 200) {
        if (status === 101) throw new MisframedError('unexpected 101 Switching Protocols');
        this.buffer = this.buffer.subarray(size);
        this.interim.push(status);
        continue;
      }
      const res: RawResponse = { status, reason, headers, body: Buffer.alloc(0), interim: this.interim, closeDelimited: false };
      const lengths = headers.filter(([n]) => n === 'content-length').map(([, v]) => v);
      const codings = headers.filter(([n]) => n === 'transfer-encoding').map(([, v]) => v);
      if (lengths.length > 1) throw new MisframedError(`several Content-Length headers: ${lengths.join(' / ')}`);
      if (lengths.length === 1 && codings.length > 0) throw new MisframedError('both Content-Length and Transfer-Encoding');
      if (lengths.length === 1 && !/^\d{1,15}$/.test(lengths[0]!)) throw new MisframedError(`bad Content-Length ${JSON.stringify(lengths[0])}`);
      if (codings.length > 0 && (codings.length > 1 || codings[0]!.toLowerCase() !== 'chunked')) {
        throw new MisframedError(`unexpected Transfer-Encoding ${JSON.stringify(codings.join(', '))}`);
      }
      if (method === 'HEAD' || status === 204 || status === 304) {
        if ((status === 204 || status === 304) && (lengths.length > 0 || codings.length > 0)) {
          throw new MisframedError(`${status} with a body framing header`);
        }
        this.buffer = this.buffer.subarray(size);
        this.interim = [];
        return res;
      }
      if (lengths.length === 1) {
        const length = Number(lengths[0]);
        if (this.buffer.length < size + length) {
          if (eof) throw new MisframedError(`connection closed after ${this.buffer.length - size} of ${length} body bytes`);
          return undefined;
        }
        res.body = Buffer.from(this.buffer.subarray(size, size + length));
        this.buffer = this.buffer.subarray(size + length);
        this.interim = [];
        return res;
      }
      if (codings.length === 1) {
        const chunked = this.parseChunked(size);
        if (chunked === undefined) {
          if (eof) throw new MisframedError('connection closed within a chunked body');
          return undefined;
        }
        res.body = chunked.body;
        this.buffer = this.buffer.subarray(chunked.end);
        this.interim = [];
        return res;
      }
      // No framing: the body runs to the close (RFC 9112 §6.3, last rule).
      if (!eof) return undefined;
      res.body = Buffer.from(this.buffer.subarray(size));
      res.closeDelimited = true;
      this.buffer = Buffer.alloc(0);
      this.interim = [];
      return res;
    }
  }

  private parseHead(): { status: number; reason: string; headers: Array<[string, string]>; size: number } | undefined {
    const buf = this.buffer;
    const prefix = 'HTTP/1.1 ';
    const start = buf.subarray(0, prefix.length).toString('latin1');
    if (!prefix.startsWith(start)) throw new MisframedError(`not a status line: ${preview(buf)}`);
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) {
      if (buf.length > MAX_HEAD) throw new MisframedError('response head over 64 KiB');
      // A bare LF anywhere in the head so far is a framing error already.
      if (/[^\r]\n/.test(buf.toString('latin1'))) throw new MisframedError(`bare LF in a response head: ${preview(buf)}`);
      return undefined;
    }
    const lines = buf.subarray(0, end).toString('latin1').split('\r\n');
    const statusLine = /^HTTP\/1\.1 ([1-5]\d\d) ([\t\x20-\x7e]*)$/.exec(lines[0]!);
    if (!statusLine) throw new MisframedError(`bad status line: ${JSON.stringify(lines[0])}`);
    const headers: Array<[string, string]> = [];
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      const name = line.slice(0, colon);
      const value = line.slice(colon + 1);
      if (colon <= 0 || !TOKEN.test(name) || !/^[\t\x20-\x7e\x80-\xff]*$/.test(value)) throw new MisframedError(`bad header line: ${JSON.stringify(line)}`);
      headers.push([name.toLowerCase(), value.trim()]);
    }
    return { status: Number(statusLine[1]), reason: statusLine[2]!, headers, size: end + 4 };
  }

  private parseChunked(from: number): { body: Buffer; end: number } | undefined {
    const buf = this.buffer;
    const parts: Buffer[] = [];
    let at = from;
    for (;;) {
      const lineEnd = buf.indexOf('\r\n', at);
      if (lineEnd < 0) return undefined;
      const sizeLine = buf.subarray(at, lineEnd).toString('latin1');
      const match = /^([0-9a-fA-F]{1,8})(;[\t\x20-\x7e]*)?$/.exec(sizeLine);
      if (!match) throw new MisframedError(`bad chunk size line ${JSON.stringify(sizeLine)}`);
      const size = parseInt(match[1]!, 16);
      at = lineEnd + 2;
      if (size === 0) {
        // Trailer fields, then the empty line.
        for (;;) {
          const trailerEnd = buf.indexOf('\r\n', at);
          if (trailerEnd < 0) return undefined;
          if (trailerEnd === at) return { body: Buffer.concat(parts), end: at + 2 };
          const line = buf.subarray(at, trailerEnd).toString('latin1');
          if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+:[\t\x20-\x7e]*$/.test(line)) throw new MisframedError(`bad trailer line ${JSON.stringify(line)}`);
          at = trailerEnd + 2;
        }
      }
      if (buf.length < at + size + 2) return undefined;
      parts.push(Buffer.from(buf.subarray(at, at + size)));
      if (buf[at + size] !== 13 || buf[at + size + 1] !== 10) throw new MisframedError('chunk data not followed by CRLF');
      at += size + 2;
    }
  }
}

export const preview = (buf: Buffer, max = 120) =>
  JSON.stringify(buf.subarray(0, max).toString('latin1')) + (buf.length > max ? `… (${buf.length} bytes)` : '');

/** How a raw connection ended, as the client saw it. */
export interface RawEnd {
  /** The server sent FIN. */
  fin: boolean;
  /** A socket error (ECONNRESET, EPIPE, ...), if any. */
  error?: string;
}

/**
 * One TCP connection: write bytes, wait for responses in order, see how it ends. Responses are
 * matched to the methods given to `expect` in order.
 */
export class RawConnection {
  readonly parser = new ResponseParser();
  private readonly socket: net.Socket;
  private waiters: Array<() => void> = [];
  private ended: RawEnd | undefined;
  private closedFlag = false;
  private finFlag = false;

  private constructor(socket: net.Socket) {
    this.socket = socket;
    socket.on('data', (data: Buffer) => {
      this.parser.push(data);
      this.wake();
    });
    socket.on('end', () => {
      this.finFlag = true;
      this.wake();
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      this.ended ??= { fin: this.finFlag, error: error.code ?? error.message };
      this.wake();
    });
    socket.on('close', () => {
      this.closedFlag = true;
      this.ended ??= { fin: this.finFlag };
      this.wake();
    });
  }

  static open(port: number, host = '127.0.0.1'): Promise<RawConnection> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host, noDelay: true });
      socket.once('connect', () => {
        socket.off('error', reject);
        resolve(new RawConnection(socket));
      });
      socket.once('error', reject);
    });
  }

  private wake() {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  private changed(deadline: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), Math.max(0, deadline - Date.now()));
      this.waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Writes the bytes, in pieces split at the given offsets (each piece its own write, a macrotask apart). */
  async write(bytes: Buffer, splits: number[] = []): Promise<void> {
    const cuts = [...new Set(splits.filter((n) => n > 0 && n < bytes.length))].sort((a, b) => a - b);
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      if (this.socket.destroyed || this.socket.writableEnded) return;
      const piece = bytes.subarray(from, cut);
      from = cut;
      await new Promise<void>((resolve) => {
        if (this.socket.write(piece)) return resolve();
        const done = () => {
          this.socket.off('drain', done);
          this.socket.off('close', done);
          resolve();
        };
        this.socket.on('drain', done);
        this.socket.on('close', done);
      });
      if (cut !== bytes.length) await new Promise((r) => setImmediate(r));
    }
  }

  /** Half-closes the connection (FIN) after the bytes written so far. */
  end() {
    if (!this.socket.destroyed) this.socket.end();
  }

  destroy() {
    this.socket.destroy();
  }

  /** How the connection ended so far (undefined while it is open). */
  get outcome(): RawEnd | undefined {
    return this.ended;
  }

  get fin(): boolean {
    return this.finFlag;
  }

  /**
   * The next response, to a request of `method`: the response, 'closed' when the connection
   * ended first (see `end_`), or 'timeout'. Throws MisframedError.
   */
  async response(method: string, deadline: number): Promise<RawResponse | 'closed' | 'timeout'> {
    for (;;) {
      const res = this.parser.next(method, this.finFlag || this.closedFlag);
      if (res) return res;
      if (this.ended !== undefined || this.finFlag) return 'closed';
      if (!(await this.changed(deadline))) return 'timeout';
    }
  }

  /** Waits until the server has closed the connection; false at the deadline. */
  async closed(deadline: number): Promise<boolean> {
    while (!this.closedFlag && !this.finFlag && this.ended === undefined) {
      if (!(await this.changed(deadline))) return false;
    }
    return true;
  }

  /** Resolves when the socket is fully closed (both directions). */
  async gone(deadline: number): Promise<boolean> {
    while (!this.closedFlag) {
      if (!(await this.changed(deadline))) return false;
    }
    return true;
  }
}
