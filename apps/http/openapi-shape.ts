import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

/**
 * What makes Relay's OpenAPI documents usable by a client generator (and pass `redocly lint`'s
 * recommended rules): an `operationId` on every operation, derived from its method and path
 * unless the route names one; an error answer on every operation that declares none; the
 * security each operation needs (a route that needs none says `security: []`); a `servers`
 * entry and the license; and no component schema that nothing refers to.
 */
type Transform = typeof jsonSchemaTransform;
type TransformInput = Parameters<Transform>[0];
type Schema = Record<string, unknown>;

const AREAS: ReadonlyArray<[prefix: string, name: string]> = [
  ['/dashboard/api/dashboard', ''],
  ['/dashboard/auth', 'auth'],
  ['/api/v1', ''],
];

const capital = (word: string) => (word === '' ? '' : word[0]!.toUpperCase() + word.slice(1));

/** `GET /dashboard/api/dashboard/group/members` → `getGroupMembers`; `DELETE …/apps/{appId}` → `deleteAppsByAppId`. */
export const operationIdOf = (method: string, url: string): string => {
  let path = url;
  let area = '';
  for (const [prefix, name] of AREAS) {
    if (path.startsWith(prefix)) {
      path = path.slice(prefix.length);
      area = name;
      break;
    }
  }
  const words = [area, ...path.split('/').filter(Boolean)].flatMap((segment) => {
    const param = /^\{(.+)\}$/.exec(segment) ?? /^:(.+)$/.exec(segment);
    const parts = (param ? param[1]! : segment).split(/[^A-Za-z0-9]+/).filter(Boolean);
    return param ? ['by', ...parts] : parts;
  });
  return method.toLowerCase() + words.map(capital).join('');
};

/** The route transform of an API: zod schemas to JSON schemas, then the additions above. */
export const documentedTransform =
  (errorBody: Schema): Transform =>
  (input: TransformInput) => {
    const transformed = jsonSchemaTransform(input);
    const schema = transformed.schema as Schema;
    if (schema.hide) return transformed;
    const method = Array.isArray(input.route.method) ? input.route.method[0]! : input.route.method;
    schema.operationId ??= operationIdOf(String(method), transformed.url);
    const response = (schema.response ?? {}) as Schema;
    // A route that declares no success answer answers a JSON object (swagger's default would go once an error is declared).
    if (!Object.keys(response).some((status) => status.startsWith('2') || status.startsWith('3'))) response['200'] = { description: 'Done', type: 'object', additionalProperties: true };
    // A route that answers no client error (health) says so with `x-no-client-errors`.
    if (!schema['x-no-client-errors'] && !Object.keys(response).some((status) => status.startsWith('4')))
      response['400'] = { description: "A bad request, in the interface's words", ...errorBody };
    schema.response = response;
    return transformed;
  };

/** The document transform: zod's, then servers, license, and no unused component schemas. */
export const documentedObject =
  (servers: ReadonlyArray<{ url: string; description: string }>) =>
  (input: Parameters<typeof jsonSchemaTransformObject>[0]) => {
    const document = jsonSchemaTransformObject(input) as Schema;
    document.servers = servers;
    const info = (document.info ?? {}) as Schema;
    info.license = { name: 'MIT', url: 'https://opensource.org/licenses/MIT' };
    document.info = info;
    const components = document.components as { schemas?: Record<string, unknown> } | undefined;
    if (components?.schemas) {
      const text = JSON.stringify({ ...document, components: { ...components, schemas: undefined } });
      // Schemas referred to by other schemas count too: repeat until nothing more is dropped.
      let schemas = components.schemas;
      for (;;) {
        const all = text + JSON.stringify(schemas);
        const kept = Object.fromEntries(Object.entries(schemas).filter(([name]) => all.includes(`"#/components/schemas/${name}"`)));
        if (Object.keys(kept).length === Object.keys(schemas).length) break;
        schemas = kept;
      }
      components.schemas = schemas;
    }
    return document;
  };

/** The server: the Relay that serves the document (a relative URL); a client sets its own base URL. */
export const LOCAL_SERVERS = [{ url: '/', description: 'The Relay that serves this document (npm start: http://localhost:8080)' }] as const;
