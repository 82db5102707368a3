import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { appDecider, appStreamName } from '../../../domain/app/decider.ts';
import type { RelayContext } from '../../services/context.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import { fail, failDomain } from '../errors.ts';
import { appMessengerStatusBody } from '../schemas.ts';
import { requireUser } from '../session.ts';
import { appMessengerJson } from '../views.ts';
import { appMessengerResponse } from '../response-schemas.ts';

export const appMessengerRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.put(
      '/app-messengers/:id',
      { schema: { summary: 'Enable or disable an app-messenger', params: z.object({ id: z.string() }), body: appMessengerStatusBody, response: { 200: appMessengerResponse } } },
      async (request, reply) => {
        const user = await requireUser(ctx, request, reply);
        if (!user) return reply;
        const target = ctx.models.apps.appMessenger(request.params.id);
        const owner = target ? ctx.models.apps.app(target.appId) : undefined;
        if (!target || !owner || owner.userId !== user.id) return fail(reply, 400, 'App messenger not found');
        const result = await handleCommand(
          ctx.store,
          appStreamName(target.appId),
          appDecider,
          { type: 'ChangeAppMessengerStatus', data: { userId: user.id, appMessengerId: target.id, status: request.body.status, now: new Date() } },
          { actor: `user:${user.id}`, correlationId: request.id },
        );
        if (!result.ok) return failDomain(reply, result.error);
        await ctx.projections.catchUp();
        return appMessengerJson(ctx.models.apps.appMessenger(target.id)!);
      },
    );
  };
