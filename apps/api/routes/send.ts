import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { MAX_BATCH } from '../../../domain/send-batch/validate.ts';
import type { RelayContext } from '../../services/context.ts';
import type { FastifyRequest } from 'fastify';
import { AUTH_ERRORS, requireCaller, sendRateLimited, type Caller } from '../auth-guard.ts';
import { buckets } from '../buckets.ts';
import { type Limiter } from '../../services/limiter.ts';
import { errorBody, sendBody, sendResponse } from '../schemas.ts';
import { enqueueMessages, validateBatch } from '../send-messages.ts';

export const SEND_BATCH_ERRORS = {
  notAnObject: 'Request body must be a JSON object with a messages array',
  notJson: 'Content-Type must be application/json',
  empty: 'At least one message is required',
  tooMany: `Batch size exceeds maximum of ${MAX_BATCH} messages`,
  noneAccepted: 'No valid messages to send',
  enqueueFailed: 'Failed to enqueue messages',
} as const;

/** The 400 text for a body whose shape is wrong before any item is looked at. */
const shapeError = (instancePath: string | undefined): string => {
  const [, field, index, key] = (instancePath ?? '').split('/');
  if (field !== 'messages' || index === undefined) return SEND_BATCH_ERRORS.notAnObject;
  if (key === undefined) return `Invalid message at index ${index}: must be an object`;
  return `Invalid message at index ${index}: ${key} must be ${key === 'split' ? 'a boolean' : 'a string'}`;
};

export const sendRoute =
  (ctx: RelayContext, limiter: Limiter): FastifyPluginAsyncZod =>
  async (app) => {
    // Relay's server has no Fastify logger (request-log.ts): lines about a request name its reqId.
    const log = ctx.log.child({ component: 'http' });
    /** Callers authenticated before their body was read. */
    const callers = new WeakMap<FastifyRequest, Caller>();
    app.post(
      '/messages/send',
      {
        // The key is checked before the body is read and parsed: a request without a usable key
        // costs no parsing (its body is read and dropped), however large or deep it is.
        onRequest: async (request, reply) => {
          const caller = requireCaller(ctx, request, reply, 403);
          if (!caller) return reply;
          callers.set(request, caller);
          return undefined;
        },
        attachValidation: true,
        schema: {
          summary: 'Enqueue a batch of outbound messages',
          body: sendBody,
          response: { 202: sendResponse, 400: errorBody, 401: errorBody, 403: errorBody, 429: errorBody, 503: errorBody },
        },
      },
      async (request, reply) => {
        const caller = callers.get(request);
        if (!caller) return reply.code(401).send({ error: AUTH_ERRORS.missing }); // not reached: onRequest answered
        const contentType = request.headers['content-type']?.split(';')[0]?.trim().toLowerCase();
        if (contentType !== 'application/json') return reply.code(400).send({ error: SEND_BATCH_ERRORS.notJson });
        if (request.validationError) {
          const first = (request.validationError.validation as Array<{ instancePath?: string }>)[0];
          return reply.code(400).send({ error: shapeError(first?.instancePath) });
        }
        const items = request.body.messages;
        if (items.length === 0) return reply.code(400).send({ error: SEND_BATCH_ERRORS.empty });
        if (items.length > MAX_BATCH) return reply.code(400).send({ error: SEND_BATCH_ERRORS.tooMany });

        const limit =
          ctx.models.users.tierOf(caller.credential.userId) === 'paid'
            ? ctx.config.RATE_LIMIT_SEND_PAID_PER_MIN
            : ctx.config.RATE_LIMIT_SEND_FREE_PER_MIN;
        const bucket = buckets.send(caller.credential.credentialId);
        const { accepted, failed } = validateBatch(items, caller);
        if (accepted.length === 0) {
          return reply.code(400).send({ error: SEND_BATCH_ERRORS.noneAccepted, ...body([], failed) });
        }
        const decided = limiter.consume(bucket, items.length, limit);
        const decision = decided instanceof Promise ? await decided : decided;
        if (!decision.allowed) return sendRateLimited(ctx, 'send', reply, decision.resetAt);
        try {
          await enqueueMessages(ctx, caller.credential, accepted);
        } catch (error) {
          limiter.refund(bucket, items.length);
          log.error({ reqId: request.id, err: error }, 'enqueue failed');
          return reply.code(503).send({ error: SEND_BATCH_ERRORS.enqueueFailed });
        }
        return reply.code(202).header('X-RateLimit-Remaining', String(decision.remaining)).send(body(accepted, failed));
      },
    );
  };

const body = (
  accepted: ReadonlyArray<{ messageId: string; appId: string; contactId: string; messenger: string }>,
  failed: ReadonlyArray<{ appId: string; contactId: string; messenger: string; error: string }>,
) => ({
  successfulMessages: accepted.map(({ messageId, appId, contactId, messenger }) => ({ messageId, appId, contactId, messenger })),
  failedMessages: [...failed],
  totalAccepted: accepted.length,
  totalFailed: failed.length,
});
