/**
 * The webhook client against a real HTTP server on loopback: what it sends, what an answer means,
 * and the address check where the connection is made (a name that now resolves to a private
 * address is refused, whatever it resolved to when the URL was saved).
 */
import http from 'node:http';
import type { AddressInfo, LookupFunction } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { postWebhook } from './webhook-client.ts';

let server: http.Server;
let port: number;
const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
let answer = 200;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
      if (answer === 0) return; // never answers
      if (answer === 1) {
        // answers 200 at once, then drips its body a byte every 50 ms, for ever
        res.writeHead(200, { 'content-type': 'text/plain' });
        const timer = setInterval(() => res.write('.'), 50);
        res.on('close', () => clearInterval(timer));
        return;
      }
      res.writeHead(answer, { 'content-type': 'text/plain' }).end('x'.repeat(answer === 299 ? 200_000 : 2));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

/** A resolver that says every name is at `address`. */
const resolvesTo =
  (address: string, family = 4): LookupFunction =>
  (_hostname, options, callback) =>
    options.all ? (callback as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]) : callback(null, address, family);

describe('webhook client', () => {
  it('POSTs the JSON body with its headers and takes a 2xx, however long its answer', async () => {
    answer = 299;
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/hook?x=1`, headers: { 'webhook-id': 'm1' }, body: '{"a":1}', timeoutMs: 2000, allowLocal: true })).toEqual({ ok: true, status: 299 });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/hook?x=1', body: '{"a":1}', headers: { 'content-type': 'application/json', 'webhook-id': 'm1', 'content-length': '7' } });
  });

  it('reports a non-2xx answer with its status, a redirect included (not followed)', async () => {
    answer = 503;
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, headers: {}, body: '{}', timeoutMs: 2000, allowLocal: true })).toEqual({ ok: false, status: 503, reason: 'The webhook answered 503', kind: 'status' });
    answer = 302;
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, headers: {}, body: '{}', timeoutMs: 2000, allowLocal: true })).toEqual({ ok: false, status: 302, reason: 'The webhook answered 302', kind: 'status' });
  });

  it('gives up on a receiver that does not answer in time', async () => {
    answer = 0;
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, headers: {}, body: '{}', timeoutMs: 200, allowLocal: true })).toEqual({ ok: false, status: null, reason: 'The webhook did not answer within 200 ms', kind: 'timeout' });
  });

  it('counts the whole attempt against its time: a receiver that answers and then drips its body fails at the deadline', async () => {
    answer = 1;
    const began = Date.now();
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, headers: {}, body: '{}', timeoutMs: 400, allowLocal: true })).toEqual({ ok: false, status: null, reason: 'The webhook did not answer within 400 ms', kind: 'timeout' });
    expect(Date.now() - began).toBeLessThan(1_500);
  });

  it('counts a request Node refuses to build (a header value it cannot send) as a failed attempt, never as a throw', async () => {
    answer = 200;
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, headers: { authorization: 'Bearer Ǽ' }, body: '{}', timeoutMs: 2000, allowLocal: true })).toEqual({
      ok: false,
      status: null,
      reason: 'The webhook request could not be made (ERR_INVALID_CHAR)',
      kind: 'request',
    });
  });

  it('refuses a host that resolves to a loopback, private or link-local address at delivery time, and an address in the URL', async () => {
    const before = seen.length;
    for (const address of ['127.0.0.1', '10.1.2.3', '169.254.169.254', '192.168.0.10']) {
      expect(await postWebhook({ url: `http://hooks.example.com:${port}/`, headers: {}, body: '{}', timeoutMs: 2000, allowLocal: false, lookup: resolvesTo(address) })).toEqual({
        ok: false,
        status: null,
        reason: 'The webhook host resolves to a loopback, private or link-local address (WEBHOOK_ALLOW_LOCAL=true allows it)',
        kind: 'refused',
      });
    }
    expect(await postWebhook({ url: `http://127.0.0.1:${port}/`, headers: {}, body: '{}', timeoutMs: 2000, allowLocal: false })).toEqual({
      ok: false,
      status: null,
      reason: 'The webhook host is a loopback, private or link-local address (WEBHOOK_ALLOW_LOCAL=true allows it)',
      kind: 'refused',
    });
    expect(seen.length).toBe(before);
  });

  it('lets the operator allow local addresses explicitly', async () => {
    answer = 204;
    expect(await postWebhook({ url: `http://hooks.example.com:${port}/`, headers: {}, body: '{}', timeoutMs: 2000, allowLocal: true, lookup: resolvesTo('127.0.0.1') })).toEqual({ ok: true, status: 204 });
  });

  it('says a host that cannot be reached could not be reached, without the URL', async () => {
    const outcome = await postWebhook({ url: 'http://127.0.0.1:1/secret-path', headers: {}, body: '{}', timeoutMs: 2000, allowLocal: true });
    expect(outcome).toEqual({ ok: false, status: null, reason: 'The webhook could not be reached (ECONNREFUSED)', kind: 'unreachable' });
  });
});
