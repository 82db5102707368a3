import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../../../test/support/relay-process.ts';
import { PaymentProcessorError, PaymentProcessorUnavailableError } from '../port.ts';
import { LosslessNumber } from 'lossless-json';
import { BitcoinRpcError, BitcoinRpcUnavailableError, createBitcoinRpcClient } from './bitcoin-rpc-client.ts';

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
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
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

/** As Bitcoin Core answers: 401 without a body to a wrong login, errors with HTTP 500 (404 for an unknown method). */
const node = (user: string, password: string, seen: { requests: Array<{ path: string; body: unknown }> } = { requests: [] }): Handler => {
  return (request, body, response) => {
    if (request.headers.authorization !== `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`) {
      response.writeHead(401, { 'www-authenticate': 'Basic realm="jsonrpc"' });
      response.end();
      return;
    }
    const call = JSON.parse(body) as { id: number; method: string; params: unknown[] };
    seen.requests.push({ path: request.url ?? '', body: call });
    const reply = (result: unknown, error: unknown = null, status = 200) => answer(response, `{"result":${JSON.stringify(result)},"error":${JSON.stringify(error)},"id":${call.id}}`, status);
    switch (call.method) {
      case 'getbalance':
        answer(response, `{"result":92233720368.54775807,"error":null,"id":${call.id}}`);
        return;
      case 'getblockcount':
        reply(42);
        return;
      case 'getaddressinfo':
        reply(null, { code: -5, message: 'Invalid address' }, 500);
        return;
      case 'getwalletinfo':
        reply(null, { code: -18, message: 'Requested wallet does not exist or is not loaded' }, 500);
        return;
      case 'warming':
        reply(null, { code: -28, message: 'Loading block index...' }, 500);
        return;
      default:
        reply(null, { code: -32601, message: 'Method not found' }, 404);
    }
  };
};

const failure = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('Bitcoin Core RPC client', () => {
  it('calls with Basic authentication from the URL, on the wallet path, and reads numbers as their text', async () => {
    const seen = { requests: [] as Array<{ path: string; body: unknown }> };
    const host = await serve(node('relay', 'p@ss:word', seen));
    const client = createBitcoinRpcClient({ url: `http://relay:${encodeURIComponent('p@ss:word')}@${host}/wallet/merchant` });
    expect(await client.call('getbalance', ['*', 0])).toEqual(new LosslessNumber('92233720368.54775807'));
    expect(await client.call('getblockcount')).toEqual(new LosslessNumber('42'));
    expect(seen.requests).toEqual([
      { path: '/wallet/merchant', body: { jsonrpc: '1.0', id: 1, method: 'getbalance', params: ['*', 0] } },
      { path: '/wallet/merchant', body: { jsonrpc: '1.0', id: 2, method: 'getblockcount', params: [] } },
    ]);
    expect(client.endpoint).toBe(`http://${host}/wallet/merchant`);
    client.close();
  });

  it('reports a refused login as an error not worth retrying, without the login in its message', async () => {
    const host = await serve(node('relay', 'right'));
    const client = createBitcoinRpcClient({ url: `http://relay:wrong-secret@${host}/` });
    const error = await failure(client.call('getblockcount'));
    expect(error).toBeInstanceOf(BitcoinRpcError);
    expect(error).toBeInstanceOf(PaymentProcessorError);
    expect(error).not.toBeInstanceOf(PaymentProcessorUnavailableError);
    expect((error as BitcoinRpcError).code).toBe(401);
    expect((error as Error).message).not.toContain('wrong-secret');
    client.close();
  });

  it('reports an error answer as a refusal with its code, and a not loaded wallet or a warming node as unavailable', async () => {
    const host = await serve(node('u', 'p'));
    const client = createBitcoinRpcClient({ url: `http://u:p@${host}/wallet/merchant` });
    const refused = await failure(client.call('getaddressinfo', ['nonsense']));
    expect(refused).toBeInstanceOf(BitcoinRpcError);
    expect(refused).toMatchObject({ code: -5, message: expect.stringContaining('Invalid address') });
    expect(await failure(client.call('nosuchmethod'))).toMatchObject({ code: -32601 });
    const notLoaded = await failure(client.call('getwalletinfo'));
    expect(notLoaded).toBeInstanceOf(BitcoinRpcUnavailableError);
    expect(notLoaded).toBeInstanceOf(PaymentProcessorUnavailableError);
    expect(await failure(client.call('warming'))).toBeInstanceOf(BitcoinRpcUnavailableError);
    client.close();
  });

  it('reports a node that cannot be reached, or does not answer in time, as unavailable', async () => {
    const down = createBitcoinRpcClient({ url: `http://u:p@127.0.0.1:${await freePort()}/` });
    const error = await failure(down.call('getblockcount'));
    expect(error).toBeInstanceOf(BitcoinRpcUnavailableError);
    expect((error as Error).message).toMatch(/cannot be reached/);
    down.close();

    const host = await serve(() => undefined); // never answers
    const slow = createBitcoinRpcClient({ url: `http://u:p@${host}/`, timeoutMs: 200 });
    const started = Date.now();
    const timedOut = await failure(slow.call('getblockcount'));
    expect(timedOut).toBeInstanceOf(BitcoinRpcUnavailableError);
    expect((timedOut as Error).message).toMatch(/within 200 ms/);
    expect(Date.now() - started).toBeLessThan(5000);
    slow.close();
  });

  it('reports what is not a JSON-RPC answer, an overload, or a too large answer as unavailable', async () => {
    const host = await serve((request, _body, response) => {
      if (request.url === '/html') answer(response, '<html>proxy error</html>', 502);
      else if (request.url === '/busy') answer(response, 'Work queue depth exceeded', 503);
      else if (request.url === '/array') answer(response, '[1,2]');
      else if (request.url === '/noresult') answer(response, '{"error":null,"id":1}');
      else answer(response, `{"result":"${'x'.repeat(10_000)}","error":null,"id":1}`);
    });
    for (const path of ['/html', '/busy', '/array', '/noresult']) {
      const client = createBitcoinRpcClient({ url: `http://u:p@${host}${path}` });
      expect(await failure(client.call('getblockcount'))).toBeInstanceOf(BitcoinRpcUnavailableError);
      client.close();
    }
    const bounded = createBitcoinRpcClient({ url: `http://u:p@${host}/big`, maxAnswerBytes: 1000 });
    const error = await failure(bounded.call('getblockcount'));
    expect(error).toBeInstanceOf(BitcoinRpcUnavailableError);
    expect((error as Error).message).toMatch(/exceeds 1000/);
    bounded.close();
  });

  it('fails as unavailable once closed, and takes only http and https URLs', async () => {
    const host = await serve(node('u', 'p'));
    const client = createBitcoinRpcClient({ url: `http://u:p@${host}/` });
    client.close();
    expect(await failure(client.call('getblockcount'))).toBeInstanceOf(BitcoinRpcUnavailableError);
    expect(() => createBitcoinRpcClient({ url: 'ftp://u:p@127.0.0.1/' })).toThrow(RangeError);
  });
});
