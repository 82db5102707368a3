import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { credentialDecider, credentialStreamName } from '../../../domain/credential/decider.ts';
import { generateApiKey, hashKey, keyPreview } from '../../../infra/crypto/keys.ts';
import { handleCommand } from '../../commands/handle-command.ts';
import type { RelayContext } from '../../services/context.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { failDomain } from '../errors.ts';
import { createCredentialBody } from '../schemas.ts';
import { requireUser } from '../session.ts';
import { credentialJson } from '../views.ts';
import { z } from 'zod';
import { credentialListResponse, credentialWithSecretListResponse, credentialWithSecretResponse, deletedCredentialResponse } from '../response-schemas.ts';

export const credentialRoutes =
  (ctx: RelayContext): FastifyPluginAsyncZod =>
  async (app) => {
    const createBody = createCredentialBody({ allowLocal: ctx.config.WEBHOOK_ALLOW_LOCAL });
    app.get('/credentials', { schema: { summary: 'Credentials, secrets redacted', response: { 200: credentialListResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return { items: ctx.models.credentials.credentialsOf(user.id).map(credentialJson) };
    });

    app.get('/credentials-full', { schema: { summary: 'Credentials with their secrets (sensitive)', response: { 200: credentialWithSecretListResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
      return {
        items: ctx.models.credentials
          .credentialsOf(user.id)
          .map((c) => ({ ...credentialJson(c), secret: ctx.secrets.decrypt(c.secretEncrypted) })),
      };
    });

    app.post('/credentials', { schema: { summary: 'Create a credential; the response shows its secret once', body: createBody, response: { 200: credentialWithSecretResponse } } }, async (request, reply) => {
      const user = await requireUser(ctx, request, reply);
      if (!user) return reply;
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
            type: request.body.type,
            name: request.body.name,
            appIds: request.body.appIds,
            ownedAppIds: ctx.models.apps.appsOf(user.id).map((a) => a.id),
            liveCredentials: ctx.models.credentials.credentialsOf(user.id).length,
            maxPerUser: ctx.config.MAX_CREDENTIALS_PER_USER,
            keyHash: hashKey(secret),
            secretEncrypted: ctx.secrets.encrypt(secret),
            keyPreview: keyPreview(secret),
            webhookUrl: request.body.webhookUrl ?? null,
            webhookAuthType: request.body.webhookAuthType ?? null,
            webhookAuthHeaderName: request.body.webhookAuthHeaderName ?? null,
            now: new Date(),
          },
        },
        { actor: `user:${user.id}`, correlationId: request.id },
      );
      if (!result.ok) return failDomain(reply, result.error);
      await ctx.projections.catchUp();
      return { ...credentialJson(ctx.models.credentials.credential(credentialId)!), secret };
    });

    app.delete('/credentials/:id', { schema: { summary: 'Delete a credential (takes effect at once)', params: z.object({ id: z.string() }), response: { 200: deletedCredentialResponse } } }, async (request, reply) => {
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
      return { success: true as const, data: { credentialId: request.params.id, deleted: true as const } };
    });
  };
