import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import type { AppMessengerIds } from '../../../domain/app/commands.ts';
import { appDecider, appStreamName } from '../../../domain/app/decider.ts';
import { newAppSettings, type AppSettings } from '../../../domain/app/events.ts';
import { MESSENGERS } from '../../../domain/shared/messengers.ts';
import { topics } from '../../../infra/broker/port.ts';
import type { UserView } from '../../../projections/users/users-projection.ts';
import { handleCommand } from '../../shared/command-handler.ts';
import type { RelayContext } from '../../shared/context.ts';
import { newId } from '../../shared/ids.ts';
import { describeIssue, fail, failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';
import { appJson } from '../views.ts';

const protocol = z.array(z.enum(MESSENGERS, { error: `Invalid protocol. Must be an array of: ${MESSENGERS.join(', ')}` }), {
  error: (issue) => (issue.input === undefined ? undefined : `Invalid protocol. Must be an array of: ${MESSENGERS.join(', ')}`),
});
const nullableString = z.string().trim().nullable().optional();
const settingsFields = {
  status: z.enum(['active', 'disabled'], { error: 'Invalid status. Must be one of: active, disabled' }).optional(),
  deliveryType: z.enum(['poll', 'webhook'], { error: 'Invalid deliveryType. Must be one of: poll, webhook' }).optional(),
  webhookUrl: z.url({ protocol: /^https?$/, error: 'Invalid webhookUrl' }).nullable().optional(),
  webhookAuthType: z.enum(['bearer', 'header'], { error: 'Invalid webhookAuthType. Must be one of: bearer, header' }).nullable().optional(),
  webhookAuthSecret: nullableString,
  webhookAuthHeaderName: nullableString,
  apiKeyId: nullableString,
};
const createBody = z.object({ name: z.string().trim().min(1, 'Missing required field: name'), protocol, ...settingsFields });
const updateBody = z.object({
  appId: z.string().min(1, 'Missing required field: appId'),
  name: z.string().trim().min(1, 'Name is required').optional(),
  protocol: protocol.optional(),
  ...settingsFields,
});

const freshAppMessengerIds = (): AppMessengerIds => ({
  signal: newId.appMessenger(),
  simplex: newId.appMessenger(),
  session: newId.appMessenger(),
});

export const appRoutes =
  (ctx: RelayContext): FastifyPluginAsync =>
  async (app) => {
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

    app.get('/apps', { schema: { summary: 'The user’s apps with their app-messengers' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return { items: ctx.models.apps.appsOf(user.id).map(appJson) };
    });

    app.post('/apps', { schema: { summary: 'Create an app', body: createBody } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const body = createBody.safeParse(request.body ?? {});
      if (!body.success) return fail(reply, 400, describeIssue(body.error, request.body));
      const settings = settingsOf(user, body.data);
      if ('error' in settings) return fail(reply, 400, settings.error!);
      const appId = newId.app();
      const result = await handleCommand(
        ctx.store,
        appStreamName(appId),
        appDecider,
        {
          type: 'CreateApp',
          data: {
            appId,
            userId: user.id,
            settings: newAppSettings(body.data.name, body.data.protocol, settings.changes),
            appMessengerIds: freshAppMessengerIds(),
            now: new Date(),
          },
        },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      // The inbound queue exists from the start, so a poll never races its creation.
      await ctx.broker.ensureTopics([topics.inbound(appId)]).catch((error: unknown) => request.log.warn({ err: error }, 'inbound topic not created yet'));
      return appJson(ctx.models.apps.app(appId)!);
    });

    app.post('/apps/update', { schema: { summary: 'Change fields of an app', body: updateBody } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const body = updateBody.safeParse(request.body ?? {});
      if (!body.success) return fail(reply, 400, describeIssue(body.error, request.body));
      const settings = settingsOf(user, body.data);
      if ('error' in settings) return fail(reply, 400, settings.error!);
      const result = await handleCommand(
        ctx.store,
        appStreamName(body.data.appId),
        appDecider,
        { type: 'UpdateApp', data: { userId: user.id, changes: settings.changes, appMessengerIds: freshAppMessengerIds(), now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return appJson(ctx.models.apps.app(body.data.appId)!);
    });

    app.delete<{ Params: { appId: string } }>('/apps/:appId', { schema: { summary: 'Delete an app' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const result = await handleCommand(
        ctx.store,
        appStreamName(request.params.appId),
        appDecider,
        { type: 'DeleteApp', data: { userId: user.id, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { success: true, data: { id: request.params.appId, deleted: true } };
    });
  };
