import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RelayContext } from '../../services/context.ts';
import { failDomain } from '../errors.ts';
import { logoutBody } from '../schemas.ts';
import { requireSession } from '../session.ts';
import { handleUserCommand } from '../user-command.ts';
import { endedSessionResponse, logoutResponse, sessionListResponse } from '../response-schemas.ts';

/** What ends the `relay_session` cookie in the browser (the proxy passes it on). */
export const CLEAR_SESSION_COOKIE = 'relay_session=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax';

/**
 * The session's own routes, under `/dashboard/auth`: sign out of this session or of all of them,
 * list the live sessions, end one. Each end is a `SessionEnded` event, effective at once.
 */
export const sessionRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.post('/logout', { schema: { summary: 'End this session, or every session of the user with {"all": true}', body: logoutBody, response: { 200: logoutResponse } } }, async (request, reply) => {
      const signedIn = await requireSession(ctx, request, reply);
      if (!signedIn) return reply;
      const { user, session } = signedIn;
      const now = new Date();
      const result = await handleUserCommand(
        ctx,
        user,
        request,
        request.body.all ? { type: 'EndAllSessions', data: { reason: 'logout', now } } : { type: 'EndSession', data: { sessionId: session.sessionId, reason: 'logout', now } },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return reply.header('set-cookie', CLEAR_SESSION_COOKIE).send({ success: true, data: { ended: result.events.length } });
    });

    app.get('/sessions', { schema: { summary: 'The live sessions of the user', response: { 200: sessionListResponse } } }, async (request, reply) => {
      const signedIn = await requireSession(ctx, request, reply);
      if (!signedIn) return reply;
      return {
        items: ctx.models.users.sessionsOf(signedIn.user.id, Date.now()).map((s) => ({
          sessionId: s.sessionId,
          startedAt: new Date(s.startedAt).toISOString(),
          expiresAt: new Date(s.expiresAt).toISOString(),
          current: s.sessionId === signedIn.session.sessionId,
        })),
      };
    });

    app.delete('/sessions/:sessionId', { schema: { summary: 'End one session of the user', params: z.object({ sessionId: z.string() }), response: { 200: endedSessionResponse } } }, async (request, reply) => {
      const signedIn = await requireSession(ctx, request, reply);
      if (!signedIn) return reply;
      const { user } = signedIn;
      const result = await handleUserCommand(ctx, user, request, { type: 'EndSession', data: { sessionId: request.params.sessionId, reason: 'logout', now: new Date() } });
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      if (request.params.sessionId === signedIn.session.sessionId) void reply.header('set-cookie', CLEAR_SESSION_COOKIE);
      return reply.send({ success: true, data: { sessionId: request.params.sessionId, ended: result.events.length > 0 } });
    });
  };
