import type { FastifyPluginAsync } from 'fastify';
import { z } from 'zod';
import { credentialDecider, credentialStreamName } from '../../../domain/credential/decider.ts';
import { CREDENTIAL_TYPES } from '../../../domain/credential/events.ts';
import { generateApiKey, hashKey, keyPreview } from '../../../infra/crypto/keys.ts';
import { handleCommand } from '../../shared/command-handler.ts';
import type { RelayContext } from '../../shared/context.ts';
import { newId } from '../../shared/ids.ts';
import { describeIssue, fail, failDomain } from '../errors.ts';
import { requireUser } from '../session.ts';
import { credentialJson } from '../views.ts';

const createBody = z.object({
  type: z.enum(CREDENTIAL_TYPES, {
    error: (issue) => (issue.input === undefined ? undefined : `Invalid credential type. Must be one of: ${CREDENTIAL_TYPES.join(', ')}`),
  }),
  appIds: z.array(z.string().min(1, 'Invalid appIds'), {
    error: (issue) => (issue.input === undefined ? undefined : 'Invalid appIds. Must be an array of app ids'),
  }),
  name: z.string({ error: (issue) => (issue.input === undefined ? undefined : 'Invalid name') }),
  webhookUrl: z.url({ protocol: /^https?$/, error: 'Invalid webhookUrl' }).nullable().optional(),
  webhookAuthType: z.string().nullable().optional(),
  webhookAuthHeaderName: z.string().nullable().optional(),
});

export const credentialRoutes =
  (ctx: RelayContext): FastifyPluginAsync =>
  async (app) => {
    app.get('/credentials', { schema: { summary: 'Credentials, secrets redacted' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return { items: ctx.models.credentials.credentialsOf(user.id).map(credentialJson) };
    });

    app.get('/credentials-full', { schema: { summary: 'Credentials with their secrets (sensitive)' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return {
        items: ctx.models.credentials
          .credentialsOf(user.id)
          .map((c) => ({ ...credentialJson(c), secret: ctx.secrets.decrypt(c.secretEncrypted) })),
      };
    });

    app.post('/credentials', { schema: { summary: 'Create a credential; the response shows its secret once', body: createBody } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const body = createBody.safeParse(request.body ?? {});
      if (!body.success) return fail(reply, 400, describeIssue(body.error, request.body));
      const secret = generateApiKey();
      const credentialId = newId.credential();
      const result = await handleCommand(
        ctx.store,
        credentialStreamName(credentialId),
        credentialDecider,
        {
          type: 'CreateCredential',
          data: {
            credentialId,
            userId: user.id,
            type: body.data.type,
            name: body.data.name,
            appIds: body.data.appIds,
            ownedAppIds: ctx.models.apps.appsOf(user.id).map((a) => a.id),
            keyHash: hashKey(secret),
            secretEncrypted: ctx.secrets.encrypt(secret),
            keyPreview: keyPreview(secret),
            webhookUrl: body.data.webhookUrl ?? null,
            webhookAuthType: body.data.webhookAuthType ?? null,
            webhookAuthHeaderName: body.data.webhookAuthHeaderName ?? null,
            now: new Date(),
          },
        },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { ...credentialJson(ctx.models.credentials.credential(credentialId)!), secret };
    });

    app.delete<{ Params: { id: string } }>('/credentials/:id', { schema: { summary: 'Delete a credential (takes effect at once)' } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      const result = await handleCommand(
        ctx.store,
        credentialStreamName(request.params.id),
        credentialDecider,
        { type: 'DeleteCredential', data: { userId: user.id, now: new Date() } },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      // Read-your-own-write: the key is refused from the very next request on.
      await ctx.projections.catchUp();
      return { success: true, data: { credentialId: request.params.id, deleted: true } };
    });
  };
