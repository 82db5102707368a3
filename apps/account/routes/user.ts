import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { RelayContext } from '../../services/context.ts';
import { failDomain } from '../errors.ts';
import { renameUserBody } from '../schemas.ts';
import { userResponse } from '../response-schemas.ts';
import { requireUser } from '../session.ts';
import { handleUserCommand } from '../user-command.ts';

export const userRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get('/user', { schema: { summary: 'The session’s user', response: { 200: userResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return { id: user.id, name: user.name, email: user.email };
    });

    app.post('/user', { schema: { summary: 'Rename the session’s user', body: renameUserBody, response: { 200: userResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const result = await handleUserCommand(ctx, user, request, { type: 'RenameUser', data: { name: request.body.name, now: new Date() } });
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      const updated = ctx.models.users.user(user.id)!;
      return { id: updated.id, name: updated.name, email: updated.email };
    });
  };
