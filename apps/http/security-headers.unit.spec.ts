import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { responseWithHeaders, securityHeaders } from './security-headers.ts';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A server whose responses are Relay's, answering with `answer`; returns the raw head of its answer. */
const head = async (answer: (response: http.ServerResponse) => void): Promise<string[]> => {
  const server = http.createServer({ ServerResponse: responseWithHeaders(Object.entries(securityHeaders())) }, (_request, response) => answer(response));
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const raw = await new Promise<string>((resolve, reject) => {
    const request = http.get({ port, host: '127.0.0.1', agent: false }, (response) => {
      resolve(response.rawHeaders.reduce<string[]>((lines, value, i) => (i % 2 === 1 ? [...lines, `${response.rawHeaders[i - 1]}: ${value}`] : lines), []).join('\n'));
      response.resume();
    });
    request.on('error', reject);
  });
  return raw.split('\n').filter((line) => !/^(Date|Connection|Keep-Alive|Transfer-Encoding): /i.test(line));
};

const SECURITY = ['Strict-Transport-Security: max-age=15552000; includeSubDomains', 'X-Content-Type-Options: nosniff', 'X-Frame-Options: SAMEORIGIN', 'X-XSS-Protection: 0'];

describe('the security headers, written with each answer’s head', () => {
  it('joins the headers object handed to writeHead (as Fastify does)', async () => {
    expect(await head((response) => response.writeHead(200, { 'content-type': 'application/json' }).end('{}'))).toEqual(['content-type: application/json', ...SECURITY]);
  });

  it('is on answers with a reason phrase, with headers set before, and with none at all', async () => {
    expect(await head((response) => response.writeHead(404, 'Gone fishing', { 'content-length': '0' }).end())).toEqual(['content-length: 0', ...SECURITY]);
    expect(await head((response) => {
      response.setHeader('content-type', 'text/plain');
      response.writeHead(200, { 'content-length': '2' }).end('ok');
    })).toEqual(['content-type: text/plain', 'content-length: 2', ...SECURITY]);
    expect(await head((response) => response.end())).toEqual([...SECURITY, 'Content-Length: 0']);
  });

  it('leaves a security header the answer sets itself as the answer set it, once', async () => {
    expect(await head((response) => response.writeHead(200, { 'x-frame-options': 'DENY' }).end())).toEqual([
      'x-frame-options: DENY',
      'Strict-Transport-Security: max-age=15552000; includeSubDomains',
      'X-Content-Type-Options: nosniff',
      'X-XSS-Protection: 0',
    ]);
    expect(await head((response) => {
      response.setHeader('X-Frame-Options', 'DENY');
      response.end();
    })).toEqual(['X-Frame-Options: DENY', 'Strict-Transport-Security: max-age=15552000; includeSubDomains', 'X-Content-Type-Options: nosniff', 'X-XSS-Protection: 0', 'Content-Length: 0']);
  });
});
