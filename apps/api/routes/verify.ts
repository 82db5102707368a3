import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RelayContext } from '../../services/context.ts';
import { AUTH_ERRORS, requireCaller, sendRateLimited } from '../auth-guard.ts';
import { buckets } from '../buckets.ts';
import type { LimitDecision, Limiter } from '../../services/limiter.ts';
import { errorBody, verifyResponse } from '../schemas.ts';

export const verifyRoute =
  (ctx: RelayContext, limiter: Limiter): FastifyPluginAsyncZod =>
  async (app) => {
    const answer = (reply: FastifyReply, appIds: string[], decision: LimitDecision) => {
      if (!decision.allowed) return void sendRateLimited(ctx, 'verify', reply, decision.resetAt);
      reply.code(200).send({ valid: true as const, appIds });
    };
    app.get(
      '/auth/verify',
      { schema: { summary: 'Check a key and list its appIds', response: { 200: verifyResponse, 401: errorBody, 429: errorBody, 503: errorBody } } },
      // Not async: nothing here awaits (but a shared limit whose slice is spent), and a promise per request costs a microtask turn.
      (request, reply) => {
        const caller = requireCaller(ctx, request, reply, 401);
        if (!caller) return;
        if (caller.appIds.length === 0) return void reply.code(401).send({ error: AUTH_ERRORS.noApps });
        const decided = limiter.consume(buckets.verify(caller.credential.credentialId), 1, ctx.config.RATE_LIMIT_VERIFY_PER_MIN);
        // A shared limit answers later only when its slice is spent (apps/limits/sliced-limiter.ts).
        if (decided instanceof Promise) return decided.then((decision) => answer(reply, caller.appIds, decision));
        answer(reply, caller.appIds, decided);
      },
    );
  };
