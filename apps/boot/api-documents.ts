import type { FastifyInstance } from 'fastify';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildAccountApp } from '../account/app.ts';
import { inProcessForwarder } from '../dashboard/forwarder.ts';
import { buildServer } from '../http/server.ts';
import { RateLimiter } from '../limits/rate-limiter.ts';
import { loadConfig } from '../services/config.ts';
import { createLogger } from '../services/logger.ts';
import { closeContext, openContext } from './runtime.ts';

/** The two documents a Relay serves: `/docs/json` and `/docs/account.json`. */
export interface ApiDocuments {
  readonly public: Record<string, unknown>;
  readonly account: Record<string, unknown>;
}

/**
 * The documents exactly as a running Relay serves them, built in this process without listening:
 * the same servers (public API and account API) on a throwaway data directory with the default
 * settings, asked for their documents once ready, then closed. For scripts/generate-api-types.mjs
 * (the dashboard's API types) and the tests that check what was generated from them.
 */
export const buildApiDocuments = async (): Promise<ApiDocuments> => {
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
