import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { documentedObject, documentedTransform, LOCAL_SERVERS } from './openapi-shape.ts';

/**
 * OpenAPI documents generated from the zod schemas of the routes: the public API at
 * `/docs/json` with its UI at `/docs`, and the account API at `/docs/account.json`.
 */
export const registerApiDocs = async (app: FastifyInstance, version: string, accountDocs?: () => unknown) => {
  await app.register(swagger, {
    openapi: {
      info: { title: 'Relay public messaging API', version },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer' },
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
      security: [{ bearer: [] }, { apiKeyHeader: [] }],
    },
    transform: documentedTransform({ type: 'object', properties: { error: { type: 'string' } }, required: ['error'] }),
    transformObject: documentedObject(LOCAL_SERVERS),
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  if (accountDocs) app.get('/docs/account.json', { schema: { hide: true } }, async () => accountDocs());
};

/** The two documents a Relay serves: `/docs/json` and `/docs/account.json`. */
export interface ApiDocuments {
  readonly public: Record<string, unknown>;
  readonly account: Record<string, unknown>;
}

/**
 * The documents exactly as a running Relay serves them, built in this process without listening:
 * the same servers (public API and account API) on a throwaway data directory with the default
 * settings, asked for their documents once ready, then closed. For scripts/generate-api-types.mjs
 * (the dashboard's API types) and the tests that check what was generated from them. The parts
 * are imported here, not at the top: the server itself imports this module.
 */
export const buildApiDocuments = async (): Promise<ApiDocuments> => {
  const [{ loadConfig }, { createLogger }, { openContext, closeContext }, { buildAccountApp }, { buildServer }, { RateLimiter }, { inProcessForwarder }] = await Promise.all([
    import('../boot/config.ts'),
    import('../boot/logger.ts'),
    import('../boot/runtime.ts'),
    import('../account/app.ts'),
    import('./server.ts'),
    import('../limits/rate-limiter.ts'),
    import('../dashboard/forwarder.ts'),
  ]);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-docs-'));
  try {
    const config = loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent' });
    const ctx = await openContext(config, createLogger('silent'), { processMetrics: false });
    const limiter = new RateLimiter(config.RATE_LIMIT_WINDOW_MS, config.RATE_LIMIT_EVICT_INTERVAL_MS);
    let account: FastifyInstance | undefined;
    let server: FastifyInstance | undefined;
    try {
      account = await buildAccountApp(ctx);
      const backend = account;
      server = await buildServer(ctx, { limiter, forwardToAccount: inProcessForwarder(backend), accountDocs: () => backend.swagger() });
      await server.ready();
      return { public: server.swagger() as unknown as Record<string, unknown>, account: account.swagger() as unknown as Record<string, unknown> };
    } finally {
      await server?.close();
      await account?.close();
      limiter.close();
      await closeContext(ctx);
    }
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
};
