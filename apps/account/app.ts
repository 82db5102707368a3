import { randomUUID } from 'node:crypto';
import swagger from '@fastify/swagger';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { jsonSchemaTransform } from 'fastify-type-provider-zod';
import type { RelayContext } from '../shared/context.ts';
import { appMessengerRoutes } from './routes/app-messengers.ts';
import { appRoutes } from './routes/apps.ts';
import { configurationRoutes } from './routes/configuration.ts';
import { credentialRoutes } from './routes/credentials.ts';
import { userRoutes } from './routes/user.ts';

export const ACCOUNT_PREFIX = '/dashboard/api/dashboard';

/**
 * The account backend: users, apps, app-messengers and credentials of the session's user.
 * It trusts `X-Session-Token`, which only the dashboard proxy in front of it sets.
 */
export const buildAccountApp = async (ctx: RelayContext): Promise<FastifyInstance> => {
  const app = Fastify({ loggerInstance: ctx.log.child({ component: 'account' }), bodyLimit: 1024 * 1024,
    logController: new LogController({ disableRequestLogging: true }),
    // The proxy's request id (a UUID) becomes the correlation id of the events a request causes.
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
  });
  app.setErrorHandler((error, request, reply) => {
    const status = (error as { statusCode?: number }).statusCode;
    if (status !== undefined && status >= 400 && status < 500) {
      const code = (error as { code?: string }).code;
      const message = code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? 'Content-Type must be application/json' : 'Invalid JSON';
      return reply.code(400).send({ success: false, error: message });
    }
    const unavailable = error instanceof Error && /Unavailable/.test(error.name);
    request.log.error({ err: error }, 'account request failed');
    return reply
      .code(unavailable ? 503 : 500)
      .send({ success: false, error: unavailable ? 'Service temporarily unavailable' : 'Internal server error' });
  });
  // Routes validate their bodies themselves (with the same zod schemas) so that errors carry the
  // interface's words; the schemas on the routes feed the OpenAPI document.
  app.setValidatorCompiler(() => (data) => ({ value: data }));
  await app.register(swagger, {
    openapi: {
      info: { title: 'Relay account API', version: ctx.version, description: 'Behind the dashboard proxy: session cookie relay_session.' },
    },
    transform: jsonSchemaTransform,
  });
  app.setNotFoundHandler((_request, reply) => reply.code(404).send({ success: false, error: 'Not found' }));
  await app.register(
    async (scoped) => {
      await scoped.register(userRoutes(ctx));
      await scoped.register(appRoutes(ctx));
      await scoped.register(appMessengerRoutes(ctx));
      await scoped.register(credentialRoutes(ctx));
      await scoped.register(configurationRoutes(ctx));
    },
    { prefix: ACCOUNT_PREFIX },
  );
  await app.ready();
  return app as unknown as FastifyInstance;
};
