import { boundJsonBodies, DASHBOARD_BODY_LIMIT } from '../http/bounded-json.ts';
import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { RelayContext } from '../services/context.ts';
import { appMessengerRoutes } from './routes/app-messengers.ts';
import { appRoutes } from './routes/apps.ts';
import { configurationRoutes } from './routes/configuration.ts';
import { credentialRoutes } from './routes/credentials.ts';
import { groupRoutes } from './routes/groups.ts';
import { groupInviteLinkRoutes } from './routes/group-invite-link.ts';
import { groupChanges } from './group-changes.ts';
import { invoiceRoutes } from './routes/invoices.ts';
import { openBilling } from '../services/payments.ts';
import { notificationPreferencesRoutes } from './routes/notification-preferences.ts';
import { recoveryCodeRoutes } from './routes/recovery-code.ts';
import { sessionRoutes } from './routes/sessions.ts';
import { signInRoutes } from './routes/sign-in.ts';
import { messengerSignInRoutes } from './routes/messenger-sign-in.ts';
import { contactRoutes } from './routes/contacts.ts';
import { userRoutes } from './routes/user.ts';
import { zodValidatorCompiler } from './validation.ts';
import { documentedObject, documentedTransform, LOCAL_SERVERS } from '../http/openapi-shape.ts';
import { relayErrorHandler } from '../http/error-handler.ts';

export const ACCOUNT_PREFIX = '/dashboard/api/dashboard';

/** The session's own routes (sign in, sign out, sessions, linked contacts): outside the interface's proxied prefix. */
export const AUTH_PREFIX = '/dashboard/auth';

/** Relay's own group route that changes state (turning the invite link on): outside the interface's prefix, whose GET only reads. */
export const GROUP_PREFIX = '/dashboard/group';

/**
 * The account backend: users, apps, app-messengers and credentials of the session's user.
 * It trusts `X-Session-Token`, which only the dashboard proxy in front of it sets.
 */
export const buildAccountApp = async (ctx: RelayContext): Promise<FastifyInstance> => {
  const log = ctx.log.child({ component: 'account' });
  const app = Fastify({ loggerInstance: log, bodyLimit: DASHBOARD_BODY_LIMIT,
    logController: new LogController({ disableRequestLogging: true }),
    // The proxy's request id (a UUID) becomes the correlation id of the events a request causes.
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
  });
  app.setErrorHandler(relayErrorHandler({ area: 'dashboard', failed: 'account request failed', log }));
  boundJsonBodies(app as unknown as FastifyInstance);
  // Bodies are validated with the routes' zod schemas, errors in the interface's words (validation.ts).
  app.setValidatorCompiler(zodValidatorCompiler);
  // Answer schemas document the routes (OpenAPI); answers are written as they are.
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  await app.register(swagger, {
    openapi: {
      info: { title: 'Relay account API', version: ctx.version, description: 'Behind the dashboard proxy: session cookie relay_session.' },
      components: { securitySchemes: { session: { type: 'apiKey', in: 'cookie', name: 'relay_session', description: 'The dashboard session (docs/sign-in.md)' } } },
      security: [{ session: [] }],
    },
    transform: documentedTransform({ type: 'object', properties: { success: { type: 'boolean', enum: [false] }, error: { type: 'string' } }, required: ['success', 'error'] }),
    transformObject: documentedObject(LOCAL_SERVERS),
  });
  const billing = await openBilling(ctx.config);
  app.addHook('onClose', async () => billing.processor?.close());
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ success: false, error: 'Not found' }));
  const groups = groupChanges(ctx);
  app.addHook('onClose', async () => groups.close());
  await app.register(
    async (scoped) => {
      await scoped.register(userRoutes(ctx));
      await scoped.register(appRoutes(ctx));
      await scoped.register(appMessengerRoutes(ctx));
      await scoped.register(credentialRoutes(ctx));
      await scoped.register(configurationRoutes(ctx, billing));
      await scoped.register(invoiceRoutes(ctx, billing));
      await scoped.register(groupRoutes(ctx, groups));
      await scoped.register(recoveryCodeRoutes(ctx));
      await scoped.register(notificationPreferencesRoutes(ctx));
    },
    { prefix: ACCOUNT_PREFIX },
  );
  await app.register(sessionRoutes(ctx), { prefix: AUTH_PREFIX });
  await app.register(signInRoutes(ctx), { prefix: AUTH_PREFIX });
  await app.register(messengerSignInRoutes(ctx), { prefix: AUTH_PREFIX });
  await app.register(contactRoutes(ctx), { prefix: AUTH_PREFIX });
  await app.register(groupInviteLinkRoutes(groups), { prefix: GROUP_PREFIX });
  await app.ready();
  return app as unknown as FastifyInstance;
};
