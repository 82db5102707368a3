import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import type { RelayContext } from '../../services/context.ts';
import { createHealthProbe } from '../health-probe.ts';
import { healthResponse } from '../schemas.ts';

/** How stale a health answer may be: an unreachable store turns health to 503 within this. */
export const HEALTH_FRESH_FOR_MS = 250;
const JSON_TYPE = 'application/json; charset=utf-8';
type Health = z.infer<typeof healthResponse>;

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
    // The answer of a healthy Relay never changes: written once, sent as it is (issue 28, item 5).
    const okBody = JSON.stringify({ status: 'ok', version: ctx.version } satisfies Health);
    app.get(
      '/health',
      { schema: { summary: 'Liveness probe', security: [], 'x-no-client-errors': true, response: { 200: healthResponse, 503: healthResponse } } },
      // Not async: while the stores' last answer is fresh, a health check awaits nothing.
      (_request, reply) => {
        if (!ctx.readiness.ready) return void reply.code(503).send({ status: 'starting', version: ctx.version });
        const send = (up: boolean): void => {
          // A string body is sent as it is (the serializer is for objects).
          if (up) return void reply.type(JSON_TYPE).send(okBody as unknown as Health);
          ctx.log.warn('health: event store or broker unreachable');
          return void reply.code(503).send({ status: 'unavailable', version: ctx.version });
        };
        const up = storesAnswer();
        return typeof up === 'boolean' ? send(up) : up.then(send);
      },
    );
  };
