import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import { documentedObject, documentedTransform, LOCAL_SERVERS } from './openapi-shape.ts';

/**
 * OpenAPI documents generated from the zod schemas of the routes: the public API at
 * `/docs/json` with its UI at `/docs`, and the account API at `/docs/account.json`.
 */
export const registerApiDocs = async (app: FastifyInstance, version: string, accountDocs?: () => unknown) => {
  await app.register(swagger, {
    openapi: {
      info: { title: 'Relay public messaging API', version },
      components: {
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer' },
          apiKeyHeader: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
        },
      },
      security: [{ bearer: [] }, { apiKeyHeader: [] }],
    },
    transform: documentedTransform({ type: 'object', properties: { error: { type: 'string' } }, required: ['error'] }),
    transformObject: documentedObject(LOCAL_SERVERS),
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  if (accountDocs) app.get('/docs/account.json', { schema: { hide: true } }, async () => accountDocs());
};
