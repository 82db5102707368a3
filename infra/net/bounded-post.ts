import http from 'node:http';
import https from 'node:https';

/** What a bounded POST got back: the status, the headers, the body as text. */
export interface PostAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  readonly text: string;
}

/** The answer was longer than the caller would read. */
export class AnswerTooLargeError extends Error {
  override readonly name = 'AnswerTooLargeError';
}

/**
 * POSTs `body` to `url` (its path and port; no login from it) and reads the answer whole, up to
 * `maxAnswerBytes`: a longer one, declared or streamed, is cut off and rejected with
 * AnswerTooLargeError. `signal` bounds the whole exchange. For the JSON-RPC clients of the payment
 * adapters (monero-wallet-rpc, Bitcoin Core).
 */
export const boundedPost = (
  url: URL,
  options: { readonly path: string; readonly headers: Record<string, string | number>; readonly body: string; readonly agent: http.Agent; readonly signal: AbortSignal; readonly maxAnswerBytes: number },
): Promise<PostAnswer> =>
  new Promise((resolve, reject) => {
    const { path, body, agent, signal, maxAnswerBytes } = options;
    const transport = url.protocol === 'https:' ? https : http;
    const headers = { ...options.headers, 'content-length': Buffer.byteLength(body) };
    const request = transport.request({ protocol: url.protocol, hostname: url.hostname, port: url.port || undefined, path, method: 'POST', headers, agent, signal }, (response) => {
      const declared = Number(response.headers['content-length'] ?? 0);
      if (declared > maxAnswerBytes) {
        response.destroy();
        reject(new AnswerTooLargeError(`answer of ${declared} bytes exceeds ${maxAnswerBytes}`));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      response.on('data', (chunk: Buffer) => {
        size += chunk.byteLength;
        if (size > maxAnswerBytes) {
          response.destroy();
          reject(new AnswerTooLargeError(`answer exceeds ${maxAnswerBytes} bytes`));
          return;
        }
        chunks.push(chunk);
      });
      response.on('end', () => resolve({ status: response.statusCode ?? 0, headers: response.headers, text: Buffer.concat(chunks).toString('utf8') }));
      response.on('error', reject);
    });
    request.on('error', reject);
    request.end(body);
  });

/** An error's message with its code (`connect ECONNREFUSED … (ECONNREFUSED)` is not repeated). */
export const errorMessageOf = (error: unknown): string => {
  if (!(error instanceof Error)) return String(error);
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' && !error.message.includes(code) ? `${error.message} (${code})` : error.message;
};
