import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RelayContext } from '../../boot/context.ts';
import { createHealthProbe } from '../health-probe.ts';
import { healthResponse } from '../schemas.ts';

/** How stale a health answer may be: an unreachable store turns health to 503 within this. */
export const HEALTH_FRESH_FOR_MS = 250;

/**
 * Liveness: no authentication, no rate-limit headers; 503 while a part of the process is still
 * starting (`status: starting`) and when the event store or broker is unreachable.
 */
export const healthRoute =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const storesAnswer = createHealthProbe(async () => {
      await Promise.all([ctx.store.ping(), ctx.broker.ping()]);
    }, HEALTH_FRESH_FOR_MS);
    app.get(
      '/health',
      { schema: { summary: 'Liveness probe', security: [], 'x-no-client-errors': true, response: { 200: healthResponse, 503: healthResponse } } },
      async (_request, reply) => {
        if (!ctx.readiness.ready) return reply.code(503).send({ status: 'starting', version: ctx.version });
        if (await storesAnswer()) return reply.code(200).send({ status: 'ok', version: ctx.version });
        ctx.log.warn('health: event store or broker unreachable');
        return reply.code(503).send({ status: 'unavailable', version: ctx.version });
      },
    );
  };
