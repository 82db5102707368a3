import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { userDecider, userStreamName } from '../../../domain/user/decider.ts';
import { handleCommand } from '../../shared/command-handler.ts';
import type { RelayContext } from '../../shared/context.ts';
import { describeIssue, fail, failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';

const renameBody = z.object({ name: z.string().trim().min(1, 'Missing required field: name') });

export const userRoutes =
  (ctx: RelayContext): FastifyPluginAsync =>
  async (app) => {
    app.get('/user', { schema: { summary: 'The session’s user' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return { id: user.id, name: user.name, email: user.email };
    });

    app.post('/user', { schema: { summary: 'Rename the session’s user', body: renameBody } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const body = renameBody.safeParse(request.body ?? {});
      if (!body.success) return fail(reply, 400, describeIssue(body.error, request.body));
      const result = await handleCommand(
        ctx.store,
        userStreamName(user.id),
        userDecider,
        { type: 'RenameUser', data: { name: body.data.name, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      const updated = ctx.models.users.user(user.id)!;
      return { id: updated.id, name: updated.name, email: updated.email };
    });
  };
