import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/support/relay-process.ts';
import { PaymentProcessorError, PaymentProcessorUnavailableError } from '../port.ts';
import { createWalletRpcClient, MoneroWalletRpcError, MoneroWalletUnavailableError } from './wallet-rpc-client.ts';

const md5 = (text: string) => createHash('md5').update(text).digest('hex');

type Handler = (request: http.IncomingMessage, body: string, response: http.ServerResponse) => void;

const servers: http.Server[] = [];
const serve = async (handler: Handler) => {
  const server = http.createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => handler(request, body, response));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

const answer = (response: http.ServerResponse, text: string, status = 200) => {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(text);
};

/**
 * Digest as monero-wallet-rpc (epee) does it: MD5 and MD5-sess offered in two headers, and the
 * nonce good only on the connection it was given on.
 */
const digestServer = (user: string, password: string, seen: { challenges: number; inFlight: number; maxInFlight: number }): Handler => {
  const nonces = new WeakMap<Socket, string>();
  return (request, _body, response) => {
    seen.inFlight++;
    seen.maxInFlight = Math.max(seen.maxInFlight, seen.inFlight);
    const done = (status: number, text: string, headers: Record<string, string[]> = {}) =>
      setTimeout(() => {
        seen.inFlight--;
        response.writeHead(status, headers);
        response.end(text);
      }, 5);
    const nonce = nonces.get(request.socket);
    const fields = new Map([...(request.headers.authorization ?? '').matchAll(/(\w+)=(?:"([^"]*)"|([^,\s]*))/g)].map((m) => [m[1]!, m[2] ?? m[3] ?? '']));
    const expected =
      nonce &&
      md5(`${md5(`${user}:monero-rpc:${password}`)}:${nonce}:${fields.get('nc')}:${fields.get('cnonce')}:auth:${md5(`POST:${fields.get('uri')}`)}`);
    if (nonce && fields.get('nonce') === nonce && fields.get('username') === user && fields.get('response') === expected) {
      done(200, '{"id":"0","jsonrpc":"2.0","result":{"height":42}}');
      return;
    }
    const fresh = randomBytes(16).toString('base64');
    nonces.set(request.socket, fresh);
    seen.challenges++;
    done(401, 'Unauthorized', {
      'www-authenticate': [
        `Digest qop="auth",algorithm=MD5,realm="monero-rpc",nonce="${fresh}",stale=false`,
        `Digest qop="auth",algorithm=MD5-sess,realm="monero-rpc",nonce="${fresh}",stale=false`,
      ],
    });
  };
};

describe('monero-wallet-rpc client', () => {
  it('gives the result with integers exact', async () => {
    const url = await serve((_request, body, response) => {
      expect(JSON.parse(body)).toMatchObject({ jsonrpc: '2.0', method: 'get_balance', params: { account_index: 0 } });
      answer(response, '{"id":"0","jsonrpc":"2.0","result":{"balance":18446744073709551615}}');
    });
    expect(await createWalletRpcClient({ url }).call('get_balance', { account_index: 0 })).toEqual({ balance: 18446744073709551615n });
  });

  it('sends bigints as JSON integers', async () => {
    let sent = '';
    const url = await serve((_request, body, response) => {
      sent = body;
      answer(response, '{"id":"0","jsonrpc":"2.0","result":{}}');
    });
    await createWalletRpcClient({ url }).call('transfer', { destinations: [{ amount: 12345678901234567890n, address: 'a' }] });
    expect(sent).toContain('"amount":12345678901234567890');
  });

  it('answers a wallet that cannot be reached with MoneroWalletUnavailableError, a PaymentProcessorUnavailableError', async () => {
    const client = createWalletRpcClient({ url: `http://127.0.0.1:${await freePort()}`, timeoutMs: 2000 });
    const error = await client.call('get_height').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MoneroWalletUnavailableError);
    expect(error).toBeInstanceOf(PaymentProcessorUnavailableError);
    expect((error as Error).message).toMatch(/cannot be reached.*ECONNREFUSED/);
  });

  it('gives up on a wallet that does not answer within the timeout', async () => {
    const url = await serve(() => undefined);
    const started = Date.now();
    await expect(createWalletRpcClient({ url, timeoutMs: 300 }).call('refresh')).rejects.toThrow(
      new MoneroWalletUnavailableError(`monero-wallet-rpc at ${url} did not answer refresh within 300 ms`),
    );
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('counts the time a call waits behind another in its timeout', async () => {
    const url = await serve((request, body, response) => {
      if (JSON.parse(body).method === 'slow') setTimeout(() => answer(response, '{"id":"0","jsonrpc":"2.0","result":{}}'), 400);
      else answer(response, '{"id":"0","jsonrpc":"2.0","result":{}}');
    });
    const client = createWalletRpcClient({ url });
    const slow = client.call('slow');
    await expect(client.call('quick', {}, { timeoutMs: 100 })).rejects.toBeInstanceOf(MoneroWalletUnavailableError);
    await expect(slow).resolves.toEqual({});
  });

  it('treats an HTTP error, an answer that is not JSON-RPC, and "no wallet file" as unavailable', async () => {
    const answers: Array<[what: string, text: string, status: number]> = [
      ['HTTP 500', 'oops', 500],
      ['not JSON', '<html>', 200],
      ['not an object', '[1]', 200],
      ['no result', '{"id":"0","jsonrpc":"2.0"}', 200],
      ['no wallet', '{"id":"0","jsonrpc":"2.0","error":{"code":-13,"message":"No wallet file"}}', 200],
    ];
    for (const [what, text, status] of answers) {
      const url = await serve((_request, _body, response) => answer(response, text, status));
      await expect(createWalletRpcClient({ url }).call('get_transfers'), what).rejects.toBeInstanceOf(MoneroWalletUnavailableError);
    }
  });

  it('gives any other error answer as MoneroWalletRpcError with its code: not worth retrying', async () => {
    const url = await serve((_request, _body, response) => answer(response, '{"id":"0","jsonrpc":"2.0","error":{"code":-2,"message":"Invalid address"}}'));
    const error = await createWalletRpcClient({ url }).call('make_uri').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MoneroWalletRpcError);
    expect(error).toBeInstanceOf(PaymentProcessorError);
    expect(error).not.toBeInstanceOf(PaymentProcessorUnavailableError);
    expect(error).toMatchObject({ code: -2, message: 'monero-wallet-rpc refused make_uri: Invalid address (-2)' });
  });

  it('refuses an answer larger than its limit', async () => {
    const url = await serve((_request, _body, response) => answer(response, `{"id":"0","jsonrpc":"2.0","result":{"note":"${'x'.repeat(5000)}"}}`));
    await expect(createWalletRpcClient({ url, maxAnswerBytes: 1000 }).call('get_transfers')).rejects.toThrow(/exceeds 1000/);
  });

  it("answers the wallet's Digest challenge once per connection, and sends calls one at a time on one connection", async () => {
    const seen = { challenges: 0, inFlight: 0, maxInFlight: 0 };
    const url = new URL(await serve(digestServer('relay', 's3cret', seen)));
    url.username = 'relay';
    url.password = 's3cret';
    const client = createWalletRpcClient({ url: url.toString() });
    const results = await Promise.all([client.call('get_height'), client.call('get_height'), client.call('get_height')]);
    expect(results).toEqual([{ height: 42n }, { height: 42n }, { height: 42n }]);
    expect(seen).toMatchObject({ challenges: 1, maxInFlight: 1 });
    expect(await client.call('get_height')).toEqual({ height: 42n });
    expect(seen.challenges).toBe(1);
    client.close();
    await expect(client.call('get_height')).rejects.toBeInstanceOf(MoneroWalletUnavailableError);
  });

  it('answers a new challenge when its connection was closed (the wallet restarted)', async () => {
    const seen = { challenges: 0, inFlight: 0, maxInFlight: 0 };
    const base = await serve(digestServer('relay', 's3cret', seen));
    const url = base.replace('http://', 'http://relay:s3cret@');
    const client = createWalletRpcClient({ url });
    expect(await client.call('get_height')).toEqual({ height: 42n });
    servers[0]!.closeAllConnections();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await client.call('get_height')).toEqual({ height: 42n });
    expect(seen.challenges).toBe(2);
    client.close();
  });

  it('reports a refused login as MoneroWalletRpcError, without the password', async () => {
    const seen = { challenges: 0, inFlight: 0, maxInFlight: 0 };
    const url = (await serve(digestServer('relay', 's3cret', seen))).replace('http://', 'http://relay:wrong-password@');
    const client = createWalletRpcClient({ url });
    const error = await client.call('get_height').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MoneroWalletRpcError);
    expect(error).toMatchObject({ code: 401 });
    expect((error as Error).message).not.toContain('wrong-password');
    client.close();
  });
});
