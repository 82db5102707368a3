import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ALERT_CATEGORIES, ALERT_CHANNELS, changedPreferences, type NotificationPreferences } from '../../../domain/user/notification-preferences.ts';
import type { RelayContext } from '../../services/context.ts';
import { fail, failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';
import { handleUserCommand } from '../user-command.ts';
import { notificationPreferencesResponse } from '../response-schemas.ts';

const shape = (preferences: NotificationPreferences) => ({ categories: [...ALERT_CATEGORIES], channels: [...ALERT_CHANNELS], preferences });

const body = z
  .object({
    preferences: z.record(z.string(), z.unknown(), { error: (issue) => (issue.input === undefined ? undefined : 'Invalid preferences: must be an object of channels') }),
  })
  .passthrough();

/**
 * `GET /notification-preferences`: `{ categories, channels, preferences: { <channel>: { <category>:
 * true|false } } }`. `POST` takes that shape back, changed (all of it or only the toggles that
 * change), and answers the new one; the change is an event, in force for the next alert.
 */
export const notificationPreferencesRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    app.get('/notification-preferences', { schema: { summary: 'Which alerts the user gets on which channel', response: { 200: notificationPreferencesResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return shape(ctx.models.users.preferencesOf(user.id));
    });

    app.post('/notification-preferences', { schema: { summary: 'Changes which alerts the user gets on which channel', body, response: { 200: notificationPreferencesResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const changed = changedPreferences(ctx.models.users.preferencesOf(user.id), request.body.preferences);
      if ('problem' in changed) return fail(reply, 400, changed.problem);
      const result = await handleUserCommand(ctx, user, request, { type: 'SetNotificationPreferences', data: { preferences: changed.preferences, now: new Date() } });
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return shape(ctx.models.users.preferencesOf(user.id));
    });
  };
