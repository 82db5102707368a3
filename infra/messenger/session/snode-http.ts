import { Agent, request } from 'node:https';
import type { Snode } from './snode-pool.ts';
import type { HttpAnswer, SnodeTransport } from './snode-transport.ts';

/**
 * JSON over HTTPS to Session's storage servers and seed nodes. Storage servers present self-signed
 * certificates (their identity is their Ed25519 key, not a CA), so they are not verified here, as
 * Session's own apps do; seed nodes are verified against `seedCa` when it is given. Every answer is
 * bounded in size and time.
 */
export interface SnodeHttpOptions {
  readonly timeoutMs: number;
  readonly maxResponseBytes: number;
  /** PEM certificate(s) the seed nodes must chain to; without it, seed certificates are not checked. */
  readonly seedCa?: string | Buffer;
}

/** An answer as bytes: what a guard node returns to an onion request (base64 text, or an error text). */
export interface RawHttpAnswer {
  readonly status: number;
  readonly body: Buffer;
}

/** The request never got an HTTP answer (refused, reset, timed out, too large). */
export class SnodeUnreachableError extends Error {
  override readonly name = 'SnodeUnreachableError';
}

export class SnodeHttp implements SnodeTransport {
  private readonly snodeAgent = new Agent({ keepAlive: true, maxSockets: 4, rejectUnauthorized: false });
  private readonly seedAgent: Agent;

  constructor(private readonly options: SnodeHttpOptions) {
    this.seedAgent =
      options.seedCa !== undefined
        ? new Agent({ keepAlive: true, maxSockets: 2, rejectUnauthorized: true, ca: options.seedCa })
        : new Agent({ keepAlive: true, maxSockets: 2, rejectUnauthorized: false });
  }

  /** POST to a storage server's /storage_rpc/v1, directly (the node sees this machine's address). */
  storageRpc(node: Snode, method: string, params: object): Promise<HttpAnswer> {
    return this.post(new URL(`https://${node.ip.includes(':') ? `[${node.ip}]` : node.ip}:${node.port}/storage_rpc/v1`), { method, params }, this.snodeAgent);
  }

  /** POST a JSON-RPC call to a seed node's /json_rpc. */
  seedRpc(seedUrl: string, method: string, params: object): Promise<HttpAnswer> {
    return this.post(new URL('json_rpc', seedUrl.endsWith('/') ? seedUrl : `${seedUrl}/`), { jsonrpc: '2.0', id: 0, method, params }, this.seedAgent);
  }

  /**
   * POST an onion request's bytes to a guard node's /onion_req/v2 (session-storage-server
   * oxenss/server/https.cpp). The guard's certificate is not verified, as for every storage server:
   * what protects the request is its onion encryption (each layer only opens with one node's X25519
   * key, the answer only with the client's key), not TLS. Bounded in size and time like every call.
   */
  async onionRequest(guard: Snode, payload: Uint8Array): Promise<RawHttpAnswer> {
    const { status, body } = await this.exchange(snodeUrl(guard, '/onion_req/v2'), Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength), 'application/octet-stream', this.snodeAgent);
    return { status, body };
  }

  close(): void {
    this.snodeAgent.destroy();
    this.seedAgent.destroy();
  }

  private async post(url: URL, payload: object, agent: Agent): Promise<HttpAnswer> {
    const { status, body, contentType } = await this.exchange(url, Buffer.from(JSON.stringify(payload)), 'application/json', agent);
    const text = body.toString('utf8');
    let parsed: unknown = text;
    if (contentType.includes('json')) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status, body: parsed };
  }

  private exchange(url: URL, body: Buffer, contentType: string, agent: Agent): Promise<RawHttpAnswer & { contentType: string }> {
    const { timeoutMs, maxResponseBytes } = this.options;
    return new Promise((resolve, reject) => {
      let settled = false;
      const fail = (reason: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(deadline);
        req.destroy();
        reject(new SnodeUnreachableError(`${url.host}: ${reason}`));
      };
      const req = request(url, {
        method: 'POST',
        agent,
        headers: { 'content-type': contentType, 'content-length': body.byteLength, accept: 'application/json' },
      });
      const deadline = setTimeout(() => fail(`no answer within ${timeoutMs} ms`), timeoutMs);
      req.on('error', (error) => fail(error.message));
      req.on('response', (res) => {
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > maxResponseBytes) return fail(`answer of ${declared} bytes is over the ${maxResponseBytes}-byte bound`);
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.byteLength;
          if (size > maxResponseBytes) return fail(`answer is over the ${maxResponseBytes}-byte bound`);
          chunks.push(chunk);
        });
        res.on('error', (error) => fail(error.message));
        res.on('end', () => {
          if (settled) return;
          settled = true;
          clearTimeout(deadline);
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks), contentType: res.headers['content-type'] ?? '' });
        });
      });
      req.end(body);
    });
  }
}

function snodeUrl(node: Snode, path: string): URL {
  return new URL(`https://${node.ip.includes(':') ? `[${node.ip}]` : node.ip}:${node.port}${path}`);
}
