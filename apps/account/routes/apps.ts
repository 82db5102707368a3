import { randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AppMessengerIds } from '../../../domain/app/commands.ts';
import { appDecider, appStreamName } from '../../../domain/app/decider.ts';
import { newAppSettings, type AppSettings } from '../../../domain/app/events.ts';
import { topics } from '../../services/topology.ts';
import type { UserView } from '../../../projections/users/users-projection.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import type { RelayContext } from '../../services/context.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { fail, failDomain } from '../errors.ts';
import { appBodies } from '../schemas.ts';
import { appListResponse, deletedAppResponse, savedAppResponse } from '../response-schemas.ts';
import { requireUser } from '../session.ts';
import { appJson } from '../views.ts';

const freshAppMessengerIds = (): AppMessengerIds => ({
  signal: newId.appMessenger(),
  simplex: newId.appMessenger(),
  session: newId.appMessenger(),
});

export const appRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const { create: createBody, update: updateBody } = appBodies({ allowLocal: ctx.config.WEBHOOK_ALLOW_LOCAL });
    /** The settings fields present in a body, with the secret sealed and the key link checked. */
    const settingsOf = (user: UserView, body: z.infer<typeof updateBody> | z.infer<typeof createBody>) => {
      const { webhookAuthSecret, ...rest } = body as Record<string, unknown> & typeof body;
      if (body.apiKeyId) {
        const credential = ctx.models.credentials.credential(body.apiKeyId);
        if (!credential || credential.userId !== user.id) return { error: 'Unknown apiKeyId' } as const;
      }
      const changes: Partial<AppSettings> = {};
      for (const key of ['name', 'protocol', 'status', 'deliveryType', 'webhookUrl', 'webhookAuthType', 'webhookAuthHeaderName', 'apiKeyId'] as const) {
        if (rest[key] !== undefined) (changes as Record<string, unknown>)[key] = rest[key];
      }
      if (webhookAuthSecret !== undefined)
        changes.webhookAuthSecretEncrypted = webhookAuthSecret === null || webhookAuthSecret === '' ? null : ctx.secrets.encrypt(webhookAuthSecret);
      return { changes } as const;
    };

    /**
     * A Standard Webhooks signing secret for the decider to take if the app needs one (a webhook app
     * without one, or a rotation), and how to tell whether it did: its plain text is shown once.
     */
    const signingOffer = (rotate: boolean) => {
      const secret = `whsec_${randomBytes(32).toString('base64')}`;
      const encrypted = ctx.secrets.encrypt(secret);
      return {
        offer: { encrypted, rotate, overlapMs: ctx.config.WEBHOOK_SECRET_OVERLAP_HOURS * 3_600_000 },
        shown: (events: ReadonlyArray<{ data: unknown }>) =>
          events.some((event) => {
            const data = event.data as { webhookSigningSecretEncrypted?: unknown; changes?: { webhookSigningSecretEncrypted?: unknown } };
            return data.webhookSigningSecretEncrypted === encrypted || data.changes?.webhookSigningSecretEncrypted === encrypted;
          })
            ? { webhookSigningSecret: secret }
            : {},
      };
    };

    app.get('/apps', { schema: { summary: 'The user’s apps with their app-messengers', response: { 200: appListResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return { items: ctx.models.apps.appsOf(user.id).map(appJson) };
    });

    app.post('/apps', { schema: { summary: 'Create an app', body: createBody, response: { 200: savedAppResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const settings = settingsOf(user, request.body);
      if ('error' in settings) return fail(reply, 400, settings.error!);
      const appId = newId.app();
      const signing = signingOffer(false);
      const result = await handleCommand(
        ctx.store,
        appStreamName(appId),
        appDecider,
        {
          type: 'CreateApp',
          data: {
            appId,
            userId: user.id,
            settings: newAppSettings(request.body.name, request.body.protocol, settings.changes),
            appMessengerIds: freshAppMessengerIds(),
            liveApps: ctx.models.apps.appsOf(user.id).length,
            maxPerUser: ctx.config.MAX_APPS_PER_USER,
            signingSecret: signing.offer,
            now: new Date(),
          },
        },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      // The inbound queue exists from the start, so a poll never races its creation.
      await ctx.broker.ensureTopics([topics.inbound(appId)]).catch((error: unknown) => request.log.warn({ err: error }, 'inbound topic not created yet'));
      return { ...appJson(ctx.models.apps.app(appId)!), ...signing.shown(result.events) };
    });

    app.post('/apps/update', { schema: { summary: 'Change fields of an app', body: updateBody, response: { 200: savedAppResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const settings = settingsOf(user, request.body);
      if ('error' in settings) return fail(reply, 400, settings.error!);
      const signing = signingOffer(request.body.rotateWebhookSigningSecret === true);
      const result = await handleCommand(
        ctx.store,
        appStreamName(request.body.appId),
        appDecider,
        { type: 'UpdateApp', data: { userId: user.id, changes: settings.changes, appMessengerIds: freshAppMessengerIds(), signingSecret: signing.offer, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { ...appJson(ctx.models.apps.app(request.body.appId)!), ...signing.shown(result.events) };
    });

    app.delete('/apps/:appId', { schema: { summary: 'Delete an app', params: z.object({ appId: z.string() }), response: { 200: deletedAppResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const result = await handleCommand(
        ctx.store,
        appStreamName(request.params.appId),
        appDecider,
        { type: 'DeleteApp', data: { userId: user.id, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
        // Every message body of the app is forgotten with it (docs/privacy.md).
        { keys: (events) => (events.some((e) => e.type === 'AppDeleted') ? { retireScopes: [request.params.appId] } : undefined) },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { success: true as const, data: { id: request.params.appId, deleted: true as const } };
    });
  };
