import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { appDecider, appStreamName } from '../../../domain/app/decider.ts';
import { handleCommand } from '../../shared/command-handler.ts';
import type { RelayContext } from '../../shared/context.ts';
import { describeIssue, fail, failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';
import { appMessengerJson } from '../views.ts';

const statusBody = z.object({
  status: z.enum(['active', 'disabled'], {
    error: (issue) => (issue.input === undefined ? undefined : 'Invalid status. Must be one of: active, disabled'),
  }),
});

export const appMessengerRoutes =
  (ctx: RelayContext): FastifyPluginAsync =>
  async (app) => {
    app.put<{ Params: { id: string } }>('/app-messengers/:id', { schema: { summary: 'Enable or disable an app-messenger', body: statusBody } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const body = statusBody.safeParse(request.body ?? {});
      if (!body.success) return fail(reply, 400, describeIssue(body.error, request.body));
      const target = ctx.models.apps.appMessenger(request.params.id);
      const owner = target ? ctx.models.apps.app(target.appId) : undefined;
      if (!target || !owner || owner.userId !== user.id) return fail(reply, 400, 'App messenger not found');
      const result = await handleCommand(
        ctx.store,
        appStreamName(target.appId),
        appDecider,
        { type: 'ChangeAppMessengerStatus', data: { userId: user.id, appMessengerId: target.id, status: body.data.status, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return appMessengerJson(ctx.models.apps.appMessenger(target.id)!);
    });
  };
