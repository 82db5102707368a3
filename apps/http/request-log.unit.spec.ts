import Fastify, { type FastifyInstance } from 'fastify';
import http, { ServerResponse } from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestLabels } from '../services/request-durations.ts';
import { fastifyLogOptions, loggedResponse, stampingErrorHandler, stampRoutes } from './request-log.ts';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

/** A Fastify server wired as server.ts wires Relay's: no logger of Fastify's, responses that record themselves. */
const serve = async (level: 'info' | 'warn') => {
  const lines: Record<string, unknown>[] = [];
  const log = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    }),
  );
  const observed: Array<RequestLabels & { seconds: number }> = [];
  const Response = loggedResponse(ServerResponse, log, { observe: (labels, seconds) => void observed.push({ ...labels, seconds }) });
  const app = Fastify({
    serverFactory: (handler: http.RequestListener) => http.createServer({ ServerResponse: Response }, handler),
    ...fastifyLogOptions(log),
  });
  apps.push(app);
  app.addHook('onRoute', stampRoutes);
  app.setErrorHandler(stampingErrorHandler((_error, _request, reply) => reply.code(400).send({ error: 'Invalid JSON' })));
  app.get('/items/:id', async (request) => {
    log.warn({ reqId: request.id }, 'from the handler');
    return { ok: true };
  });
  app.post('/guarded', { onRequest: async (_request, reply) => reply.code(401).send({ error: 'Missing API key' }) }, async () => ({ never: true }));
  app.post('/body', async () => ({ ok: true }));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { address, lines, observed };
};

describe('the request record: duration and log line, written by the response as it ends', () => {
  it("labels each answer by its route's pattern, whoever answered: the handler, a route's own hook, the error handler; unrouted is 'unmatched'", async () => {
    const { address, observed } = await serve('warn');
    expect((await fetch(`${address}/items/42`)).status).toBe(200);
    expect((await fetch(`${address}/guarded`, { method: 'POST' })).status).toBe(401);
    expect((await fetch(`${address}/body`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{bad' })).status).toBe(400);
    expect((await fetch(`${address}/nowhere`)).status).toBe(404);
    expect(observed.map(({ method, route, status_code }) => ({ method, route, status_code }))).toEqual([
      { method: 'GET', route: '/items/:id', status_code: 200 },
      { method: 'POST', route: '/guarded', status_code: 401 },
      { method: 'POST', route: '/body', status_code: 400 },
      { method: 'GET', route: 'unmatched', status_code: 404 },
    ]);
    for (const { seconds } of observed) expect(seconds).toBeGreaterThan(0);
  });

  it('writes one line per request at info, with the request id the route logs with; none at warn', async () => {
    const quiet = await serve('warn');
    await (await fetch(`${quiet.address}/items/1`)).text();
    expect(quiet.lines.map((line) => line.msg)).toEqual(['from the handler']);

    const { address, lines } = await serve('info');
    await (await fetch(`${address}/items/7`)).text();
    const [handlerLine, requestLine] = lines;
    expect(handlerLine).toMatchObject({ msg: 'from the handler', reqId: expect.stringMatching(/^req-/) });
    expect(requestLine).toMatchObject({ msg: 'request', method: 'GET', route: '/items/:id', status: 200, reqId: handlerLine!.reqId });
    expect(Object.keys(requestLine!).sort()).toEqual(['hostname', 'level', 'method', 'ms', 'msg', 'pid', 'reqId', 'route', 'status', 'time']);
    expect(lines).toHaveLength(2);
  });
});

describe("Fastify's own lines", () => {
  it('makes no child logger per request (request.log is silent) and writes the refusal of a closing server with the given logger', async () => {
    const lines: Record<string, unknown>[] = [];
    const log = pino(
      new Writable({
        write(chunk: Buffer, _encoding, done) {
          lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
          done();
        },
      }),
    );
    const app = Fastify({ ...fastifyLogOptions(log) });
    apps.push(app);
    let requestLog: unknown;
    app.get('/', async (request) => {
      requestLog = request.log;
      request.log.error('never written');
      return {};
    });
    expect((await app.inject({ url: '/' })).statusCode).toBe(200);
    expect(requestLog).toBe(app.log);
    fastifyLogOptions(log).logController!.serviceUnavailable(app.log, app);
    expect(lines).toEqual([expect.objectContaining({ level: 30, msg: 'request aborted - refusing to accept new requests as server is closing', res: { statusCode: 503 } })]);
  });
});
