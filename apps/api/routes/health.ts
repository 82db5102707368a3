import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RelayContext } from '../../shared/context.ts';
import { healthResponse } from '../schemas.ts';

/** Liveness: no authentication, no rate-limit headers; 503 when the event store is unreachable. */
export const healthRoute =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/health',
      { schema: { summary: 'Liveness probe', response: { 200: healthResponse, 503: healthResponse } } },
      async (request, reply) => {
        try {
          await ctx.store.ping();
          return reply.code(200).send({ status: 'ok', version: ctx.version });
        } catch (error) {
          request.log.warn({ err: error }, 'health: event store unreachable');
          return reply.code(503).send({ status: 'unavailable', version: ctx.version });
        }
      },
    );
  };
