/**
 * What happened to an app's messages, and trying its webhook from the page (issue 50 §1), as
 * Relay's own dashboard routes outside the account API's prefix (its route table is the
 * interface's): same-origin, JSON, the session cookie, the app's owner only (anyone else's app, or
 * none, reads as not found).
 *
 * - `GET /dashboard/messages/:appId?status=&messenger=`: the app's message log and its webhook's
 *   last attempts and health (projections/message-log, beside the statistics model).
 * - `POST /dashboard/webhook/test {appId}`: a signed sample event posted to the app's webhook now,
 *   marked as a test; answers what the receiver did.
 * - `POST /dashboard/webhook/retry {appId}`: the message waiting out its backoff is tried at once
 *   (`AppWebhookRetryRequested`, which the dispatcher of whichever process holds it follows).
 */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { signingSecretsAt } from '../../domain/app/events.ts';
import { appDecider, appStreamName } from '../../domain/app/decider.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import { postWebhook } from '../../infra/net/webhook-client.ts';
import { LOG_STATUSES } from '../../projections/message-log/entries.ts';
import type { AppView } from '../../projections/apps/apps-projection.ts';
import type { RelayContext } from '../services/context.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { isCrossOrigin, PROXY_ERRORS } from '../dashboard/proxy.ts';
import { webhookHeaders } from '../pipeline/webhook-dispatcher.ts';
import type { StatisticsSource } from '../read-models/statistics-model.ts';
import { cookieUser, withCookies } from './dashboard-session.ts';

/** The header that marks a test delivery (the body says it too: `"test": true`). */
export const TEST_EVENT_HEADER = 'relay-webhook-test';

export const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ success: false, error });

const logQuery = z.object({
  status: z.enum(LOG_STATUSES, { message: `Invalid status. Must be one of: ${LOG_STATUSES.join(', ')}` }).optional(),
  messenger: z.enum(MESSENGERS, { message: `Invalid messenger. Must be one of: ${MESSENGERS.join(', ')}` }).optional(),
});
const appBody = z.object({ appId: z.string({ message: 'Missing required field: appId' }).min(1, 'Missing required field: appId').max(64, 'Invalid appId') });

/** The sample a test delivery carries: a polled message's shape, marked as a test, with no real contact. */
export const testEvent = (app: AppView, now: Date) => ({
  type: 'relay.test',
  test: true,
  appId: app.id,
  messenger: app.settings.protocol[0] ?? 'signal',
  contactId: 'relay-test-contact',
  messageId: `test_${randomBytes(12).toString('hex')}`,
  content: 'A test event from the Relay dashboard: no contact wrote this.',
  timestamp: now.getTime(),
  isGroupMessage: false,
  isCommand: false,
});

/** The signed-in user and their live app, or undefined once the answer that refuses the request is sent (cross-origin write, no session, not their app). */
export const ownedApp = async (ctx: RelayContext, app: FastifyInstance, request: FastifyRequest, reply: FastifyReply, appId: string, write: boolean) => {
  if (write && isCrossOrigin(request.headers.origin, request.headers.host)) return void fail(reply, 400, PROXY_ERRORS.crossOrigin);
  const user = await cookieUser(ctx, app, request);
  if (!user) return void fail(reply, 400, PROXY_ERRORS.sessionRequired);
  const found = ctx.models.apps.app(appId);
  if (!found || found.userId !== user.id) return void fail(reply, 404, 'App not found');
  return { user, app: found };
};

export const appActivityRoutes = (ctx: RelayContext, statistics: StatisticsSource | undefined) => async (app: FastifyInstance) => {
  await withCookies(app);

  const ownApp = (request: FastifyRequest, reply: FastifyReply, appId: string, write: boolean) => ownedApp(ctx, app, request, reply, appId, write);
  const bodyOf = (request: FastifyRequest, reply: FastifyReply) => {
    const parsed = appBody.safeParse(request.body ?? {});
    if (!parsed.success) return void fail(reply, 400, parsed.error.issues[0]!.message);
    return parsed.data;
  };

  app.get<{ Params: { appId: string } }>('/dashboard/messages/:appId', { schema: { hide: true } }, async (request, reply) => {
    const query = logQuery.safeParse(request.query);
    if (!query.success) return fail(reply, 400, query.error.issues[0]!.message);
    const owned = await ownApp(request, reply, request.params.appId, false);
    if (!owned) return reply;
    if (!statistics) return fail(reply, 503, 'The message log is not kept by this process: ask the Relay that serves the dashboard');
    try {
      const view = await statistics.query({ scope: 'messages', userId: owned.user.id, appId: owned.app.id, filter: query.data });
      if (!view) return fail(reply, 503, 'The message log is starting: try again in a moment');
      return reply.header('cache-control', 'no-store').send({ success: true, data: view });
    } catch {
      return fail(reply, 503, 'The message log is starting: try again in a moment');
    }
  });

  app.post('/dashboard/webhook/test', { schema: { hide: true } }, async (request, reply) => {
    const body = bodyOf(request, reply);
    if (!body) return reply;
    const owned = await ownApp(request, reply, body.appId, true);
    if (!owned) return reply;
    const { settings } = owned.app;
    if (settings.deliveryType !== 'webhook' || !settings.webhookUrl) return fail(reply, 400, 'This app is not delivered by webhook');
    const now = new Date();
    const event = testEvent(owned.app, now);
    const raw = JSON.stringify(event);
    const secrets = {
      auth: settings.webhookAuthSecretEncrypted === null ? null : ctx.secrets.decrypt(settings.webhookAuthSecretEncrypted),
      signing: signingSecretsAt(settings, now).map((secret) => ctx.secrets.decrypt(secret)),
    };
    const started = performance.now();
    const outcome = await postWebhook({
      url: settings.webhookUrl,
      headers: { ...webhookHeaders(owned.app, secrets, event.messageId, raw, now), [TEST_EVENT_HEADER]: 'true' },
      body: raw,
      timeoutMs: ctx.config.WEBHOOK_TIMEOUT_MS,
      allowLocal: ctx.config.WEBHOOK_ALLOW_LOCAL,
    });
    const durationMs = Math.round(performance.now() - started);
    return reply.send({ success: true, data: { messageId: event.messageId, ok: outcome.ok, status: outcome.status, reason: outcome.ok ? null : outcome.reason, durationMs, at: now.toISOString() } });
  });

  app.post('/dashboard/webhook/retry', { schema: { hide: true } }, async (request, reply) => {
    const body = bodyOf(request, reply);
    if (!body) return reply;
    const owned = await ownApp(request, reply, body.appId, true);
    if (!owned) return reply;
    const command = { type: 'RequestWebhookRetry' as const, data: { userId: owned.user.id, now: new Date() } };
    const result = await handleCommand(ctx.store, appStreamName(owned.app.id), appDecider, command, { actor: `user:${owned.user.id}`, correlationId: request.id });
    if (!result.ok) return fail(reply, result.error.code === 'not_found' ? 404 : 400, result.error.message);
    return reply.send({ success: true, data: { requestedAt: command.data.now.toISOString() } });
  });
};
