/**
 * Signal's own mock server (`@signalapp/mock-server` 15.2.0, the server Signal Desktop's tests run
 * against), started in the test's process for the real signal-cli to talk to. It plays Signal's
 * servers and the phones: a primary device links signal-cli from its `sgnl://linkdevice` URI, and
 * contacts send and decrypt messages with libsignal.
 *
 * signal-cli 0.13.19 and this mock disagree in a few places, each bridged here at the protocol's
 * edge and nowhere else (../shared/notes/messenger-daemons.md lists how each was found):
 * - The mock serves most REST routes only on its WebSocket; signal-cli sends `PUT /v1/devices/link`
 *   as a plain HTTPS request. It is carried over an unauthenticated WebSocket to the mock, as a
 *   Signal client would send it there.
 * - signal-cli sends `null` for keys it has none of in `PUT /v2/keys`; the mock's schema refuses
 *   them. They are dropped.
 * - The mock's profile answers lack `uuid`; without it signal-cli cannot read profiles.
 * - The mock's protobufs lack the string forms of service ids (`aci`/`pni` in the provisioning
 *   message, `sourceServiceId`/`destinationServiceId` in envelopes) that signal-cli reads, and
 *   its envelopes carry no `serverGuid`; they are written beside the binary forms, with the field
 *   numbers of Signal's own protobufs.
 * - signal-cli does not acknowledge the requests on its provisioning WebSocket; the mock waits for
 *   those acknowledgements before it goes on. It goes on without them.
 * - signal-cli asks for `/storageService/v2/groups/` with a trailing slash the mock's router
 *   does not match.
 * - Node 20 lacks `Promise.withResolvers`, which the mock uses.
 */
import crypto from 'node:crypto';
import https from 'node:https';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { IncomingMessage, ServerResponse } from 'node:http';
import WebSocket from 'ws';

const require = createRequire(import.meta.url);

if (typeof (Promise as { withResolvers?: unknown }).withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: <T>() => {
      let resolve!: (value: T | PromiseLike<T>) => void;
      let reject!: (reason?: unknown) => void;
      const promise = new Promise<T>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      return { promise, resolve, reject };
    },
  });
}

type MockModule = typeof import('@signalapp/mock-server');
const mock = require('@signalapp/mock-server') as MockModule;
const MOCK_ROOT = path.dirname(require.resolve('@signalapp/mock-server/package.json'));
export const MOCK_CA = fs.readFileSync(path.join(MOCK_ROOT, 'certs/ca-cert.pem'));

export type MockServer = InstanceType<MockModule['Server']>;
export type PrimaryDevice = Awaited<ReturnType<MockServer['createPrimaryDevice']>>;
export type Device = PrimaryDevice['device'];

interface ProtoWriter {
  uint32(value: number): ProtoWriter;
  string(value: string): ProtoWriter;
}
type Encode = (message: Record<string, unknown>, writer?: ProtoWriter) => ProtoWriter;
interface Protos {
  signalservice: {
    ProvisionMessage: { encode: Encode };
    Envelope: { encode: Encode };
    WebSocketMessage: {
      encode(message: unknown): { finish(): Uint8Array };
      decode(bytes: Uint8Array): { type: number; response?: { id: unknown; status: number; message?: string; headers?: string[]; body?: Uint8Array | null } };
      Type: { REQUEST: number; RESPONSE: number };
    };
  };
}
const protos = require('@signalapp/mock-server/protos/compiled') as Protos;

/** A service id's string form from its binary form: 16 bytes are an ACI, 17 starting with 1 a PNI. */
const serviceIdString = (binary: Uint8Array): string | undefined => {
  const uuid = (bytes: Uint8Array) => {
    const hex = Buffer.from(bytes).toString('hex');
    return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
  };
  if (binary.length === 16) return uuid(binary);
  if (binary.length === 17 && binary[0] === 1) return `PNI:${uuid(binary.subarray(1))}`;
  return undefined;
};

/** Appends string fields (absent ones are skipped) to what a protobuf encoder wrote: field number → the message's value. */
const withStringFields = (encode: Encode, fields: (message: Record<string, unknown>) => ReadonlyArray<readonly [number, string | undefined]>): Encode =>
  function encodeWithStrings(message, writer) {
    const written = encode(message, writer);
    for (const [field, value] of fields(message)) if (value !== undefined) written.uint32((field << 3) | 2).string(value);
    return written;
  };

const binaryField = (message: Record<string, unknown>, name: string) => {
  const value = message[name];
  return value instanceof Uint8Array && value.length > 0 ? serviceIdString(value) : undefined;
};

let protosShimmed = false;
const shimProtos = () => {
  if (protosShimmed) return;
  protosShimmed = true;
  const { ProvisionMessage, Envelope } = protos.signalservice;
  // Signal's ProvisioningMessage: aci = 8, pni = 10 (strings). Envelope: sourceServiceId = 11, destinationServiceId = 13.
  ProvisionMessage.encode = withStringFields(ProvisionMessage.encode, (m) => [
    [8, binaryField(m, 'aciBinary')],
    [10, binaryField(m, 'pniBinary')],
  ]);
  Envelope.encode = withStringFields(Envelope.encode, (m) => [
    // serverGuid = 9: the mock fills it in neither form; signal-cli needs one for each envelope.
    [9, typeof m.serverGuid === 'string' && m.serverGuid ? undefined : (binaryField(m, 'serverGuidBinary') ?? crypto.randomUUID())],
    [11, binaryField(m, 'sourceServiceIdBinary')],
    [13, binaryField(m, 'destinationServiceIdBinary')],
  ]);
};

type RouteAnswer = [number, unknown, Record<string, string>?];
type RouteHandler = (params: Record<string, string>, body: Uint8Array | undefined, headers: Record<string, string>, query?: Record<string, unknown>) => Promise<RouteAnswer>;
interface WsRouter {
  register(method: string, pattern: string, handler: RouteHandler): void;
}

const dropNulls = (value: unknown): unknown =>
  value && typeof value === 'object' && !Array.isArray(value)
    ? Object.fromEntries(Object.entries(value).filter(([, v]) => v !== null).map(([k, v]) => [k, dropNulls(v)]))
    : value;

let routesShimmed = false;
const shimRoutes = () => {
  if (routesShimmed) return;
  routesShimmed = true;
  const { Router } = require('@signalapp/mock-server/src/server/ws/router') as { Router: { prototype: WsRouter } };
  const register = Router.prototype.register;
  Router.prototype.register = function registerShimmed(method, pattern, handler) {
    let shimmed = handler;
    if (method === 'PUT' && pattern === '/v2/keys') {
      shimmed = (params, body, headers, query) =>
        handler(params, body && Buffer.from(JSON.stringify(dropNulls(JSON.parse(Buffer.from(body).toString('utf8'))))), headers, query);
    } else if (method === 'GET' && pattern.startsWith('/v1/profile/:serviceId')) {
      shimmed = async (params, body, headers, query) => {
        const [status, answer, answerHeaders] = await handler(params, body, headers, query);
        const withUuid = status === 200 && answer && typeof answer === 'object' ? { uuid: params.serviceId, ...answer } : answer;
        return [status, withUuid, answerHeaders];
      };
    }
    register.call(this, method, pattern, shimmed);
  };
};

interface WsConnection {
  send(verb: string, path: string, options: { body: Uint8Array }): Promise<unknown>;
  handleProvision(id: string): Promise<void>;
  readonly server: { getProvisioningResponse(id: string): Promise<{ envelope: Uint8Array }> };
}

let provisioningShimmed = false;
const shimProvisioning = () => {
  if (provisioningShimmed) return;
  provisioningShimmed = true;
  const { Connection } = require('@signalapp/mock-server/src/server/ws/connection') as { Connection: { prototype: WsConnection } };
  const { ProvisioningAddress } = (protos.signalservice as unknown as { ProvisioningAddress: { encode(m: unknown): { finish(): Uint8Array } } });
  Connection.prototype.handleProvision = async function provisionWithoutAcknowledgements(id) {
    void this.send('PUT', '/v1/address', { body: ProvisioningAddress.encode({ address: id }).finish() });
    const { envelope } = await this.server.getProvisioningResponse(id);
    void this.send('PUT', '/v1/message', { body: envelope });
  };
};

/** REST requests signal-cli sends over HTTPS that the mock answers only on its WebSocket. */
const OVER_WEBSOCKET = new Set(['PUT /v1/devices/link']);

const readBody = (req: IncomingMessage) =>
  new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', reject);
  });

/** Sends one REST request over a new unauthenticated WebSocket to the mock and writes its answer. */
const overWebSocket = async (port: number, req: IncomingMessage, res: ServerResponse) => {
  const body = await readBody(req);
  const { WebSocketMessage } = protos.signalservice;
  const socket = new WebSocket(`wss://127.0.0.1:${port}/v1/websocket/`, { ca: MOCK_CA });
  try {
    await new Promise((resolve, reject) => {
      socket.once('open', resolve);
      socket.once('error', reject);
    });
    const answer = await new Promise<NonNullable<ReturnType<typeof WebSocketMessage.decode>['response']>>((resolve, reject) => {
      socket.on('message', (data: Buffer) => {
        const message = WebSocketMessage.decode(data);
        if (message.type === WebSocketMessage.Type.RESPONSE && message.response) resolve(message.response);
      });
      socket.once('error', reject);
      socket.once('close', () => reject(new Error('the mock closed the WebSocket before answering')));
      const headers = Object.entries(req.headers).flatMap(([name, value]) => (typeof value === 'string' ? [`${name}:${value}`] : []));
      socket.send(WebSocketMessage.encode({ type: WebSocketMessage.Type.REQUEST, request: { verb: req.method, path: req.url, body, headers, id: 1 } }).finish());
    });
    const contentType = answer.headers?.find((h) => h.toLowerCase().startsWith('content-type:'))?.slice('content-type:'.length).trim();
    res.writeHead(answer.status, contentType ? { 'content-type': contentType } : {});
    res.end(answer.body ? Buffer.from(answer.body) : undefined);
  } finally {
    socket.close();
  }
};

export interface SignalMock {
  readonly server: MockServer;
  /** What signal-cli must use as its service URL. */
  readonly url: string;
  close(): Promise<void>;
}

export const startSignalMock = async (): Promise<SignalMock> => {
  shimProtos();
  shimRoutes();
  shimProvisioning();
  const cdn3Path = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-signal-mock-cdn3-'));
  const server = new mock.Server({ timeout: 60_000, cdn3Path });
  await server.listen(0, '127.0.0.1');
  const httpsServer = (server as unknown as { https: https.Server }).https;
  const port = (httpsServer.address() as { port: number }).port;
  const [mockHandler] = httpsServer.listeners('request') as Array<(req: IncomingMessage, res: ServerResponse) => void>;
  httpsServer.removeAllListeners('request');
  httpsServer.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const pathname = (req.url ?? '').split('?')[0]!;
    if (pathname === '/storageService/v2/groups/') req.url = req.url!.replace('/storageService/v2/groups/', '/storageService/v2/groups');
    if (OVER_WEBSOCKET.has(`${req.method} ${pathname}`)) {
      overWebSocket(port, req, res).catch((error: Error) => {
        if (!res.headersSent) res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: error.message }));
      });
      return;
    }
    mockHandler!(req, res);
  });
  return { server, url: `https://127.0.0.1:${port}`, close: async () => {
      await server.close();
      fs.rmSync(cdn3Path, { recursive: true, force: true });
    },
  };
};
