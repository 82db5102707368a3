/**
 * "Send a test message" from an app's page (issue 50 §1): `POST /dashboard/messages/send {appId,
 * messenger, contactId, message}`, the owner only, same-origin. The message goes the public send's
 * way: each field validated by the same rules (the interface's per-message errors, as the 400's
 * `error`), counted against the user's send limit of their tier (a bucket of the dashboard's own,
 * `send:dashboard-<userId>`, since a session has no credential), and recorded as a send batch
 * (`MessagesAccepted`, `credentialId` `dashboard:<userId>`) that the pipeline delivers like any.
 */
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { validateSendItem } from '../../domain/send-batch/validate.ts';
import { newId } from '../../infra/ids/new-id.ts';
import { buckets } from '../api/buckets.ts';
import { enqueueMessages } from '../api/send-messages.ts';
import type { RelayContext } from '../services/context.ts';
import type { Limiter } from '../services/limiter.ts';
import { fail, ownedApp } from './app-activity-routes.ts';
import { withCookies } from './dashboard-session.ts';

/** Strings only, bounded (the message's own 10,000-character rule is the send's, after trimming). */
const testMessage = z.object({
  appId: z.string({ message: 'Missing required field: appId' }).max(64, 'Invalid appId'),
  messenger: z.string({ message: 'Invalid messenger. Must be one of: signal, simplex, session' }).max(16, 'Invalid messenger. Must be one of: signal, simplex, session'),
  contactId: z.string({ message: 'Missing required field: contactId' }).max(256, 'contactId is too long (at most 256 characters)'),
  message: z.string({ message: 'Missing required field: message' }).max(20_000, 'Message exceeds 10000 character limit'),
});

export const testMessageRoute = (ctx: RelayContext, limiter: Limiter) => async (app: FastifyInstance) => {
  await withCookies(app);
  app.post('/dashboard/messages/send', { schema: { hide: true } }, async (request, reply) => {
    const parsed = testMessage.safeParse(request.body ?? {});
    if (!parsed.success) return fail(reply, 400, parsed.error.issues[0]!.message);
    const owned = await ownedApp(ctx, app, request, reply, parsed.data.appId, true);
    if (!owned) return reply;
    const item = validateSendItem(parsed.data, [owned.app.id]);
    if (!item.ok) return fail(reply, 400, item.failure.error);
    const userId = owned.user.id;
    const limit = ctx.models.users.tierOf(userId) === 'paid' ? ctx.config.RATE_LIMIT_SEND_PAID_PER_MIN : ctx.config.RATE_LIMIT_SEND_FREE_PER_MIN;
    const bucket = buckets.send(`dashboard-${userId}`);
    const decided = limiter.consume(bucket, 1, limit);
    const decision = decided instanceof Promise ? await decided : decided;
    if (!decision.allowed) return reply.code(429).header('retry-after', String(Math.max(1, Math.ceil((decision.resetAt - Date.now()) / 1000)))).send({ success: false, error: 'Rate limit exceeded' });
    const message = { messageId: newId.message(), ...item.message };
    try {
      await enqueueMessages(ctx, { credentialId: `dashboard:${userId}`, userId }, [message]);
    } catch (error) {
      limiter.refund(bucket, 1);
      ctx.log.error({ reqId: request.id, err: error }, 'test message not enqueued');
      return fail(reply, 503, 'Failed to enqueue messages');
    }
    return reply.send({ success: true, data: { messageId: message.messageId, appId: message.appId, messenger: message.messenger } });
  });
};
