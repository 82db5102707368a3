import type { FastifyPluginAsync } from 'fastify';
import type { RelayContext } from '../services/context.ts';
import type { Limiter } from '../services/limiter.ts';
import { eventsRoute } from './routes/events.ts';
import { healthRoute } from './routes/health.ts';
import { pollRoute } from './routes/poll.ts';
import { sendRoute } from './routes/send.ts';
import { verifyRoute } from './routes/verify.ts';

/** The public messaging API, registered under `/api/v1`. */
export const publicApi =
  (ctx: RelayContext, limiter: Limiter): FastifyPluginAsync =>
  async (app) => {
    await app.register(healthRoute(ctx));
    await app.register(verifyRoute(ctx, limiter));
    await app.register(sendRoute(ctx, limiter));
    await app.register(pollRoute(ctx, limiter));
    await app.register(eventsRoute(ctx, limiter));
  };
