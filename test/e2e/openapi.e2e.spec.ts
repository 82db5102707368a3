/**
 * Both OpenAPI documents, as the real service serves them, pass Redocly's recommended lint rules
 * (what a client generator needs): no error, and the one warning each keeps is justified below.
 * Every operation has a unique operationId, the routes of the account lifecycle are in, every
 * success answer has its shape, and the public API's parameters and send item are the interface's.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const run = promisify(execFile);
const REDOCLY = path.resolve('node_modules/.bin/redocly');

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: Array<{ pointer: string }>;
}

const lint = async (document: unknown): Promise<Problem[]> => {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'relay-openapi-')), 'openapi.json');
  fs.writeFileSync(file, JSON.stringify(document));
  // Redocly's recommended rules, offline: no telemetry, no update check.
  const { stdout } = await run(REDOCLY, ['lint', file, '--format=json', '--extends=recommended'], {
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1' },
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return (JSON.parse(stdout) as { problems: Problem[] }).problems;
};

const operations = (document: { paths: Record<string, Record<string, { operationId?: string }>> }) =>
  Object.entries(document.paths).flatMap(([route, methods]) => Object.entries(methods).map(([method, op]) => ({ route, method, operationId: op.operationId })));

/** Every 2XX and 3XX answer of a document, with the schema of its body. */
const successAnswers = (document: any): Array<{ answer: string; schema: any }> =>
  Object.entries(document.paths as Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>).flatMap(([route, methods]) =>
    Object.entries(methods).flatMap(([method, operation]) =>
      Object.entries(operation.responses)
        .filter(([status]) => /^[23]/.test(status))
        .map(([status, response]) => ({ answer: `${method.toUpperCase()} ${route} ${status}`, schema: Object.values(response.content ?? {})[0]?.schema })),
    ),
  );

/** A body whose shape a client can read: a named schema, an object with its properties, a union of such, or a scalar (the event stream). */
const isTyped = (document: any, schema: any): boolean => {
  if (!schema) return false;
  if (typeof schema.$ref === 'string') return isTyped(document, document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
  if (Array.isArray(schema.anyOf)) return schema.anyOf.every((branch: unknown) => isTyped(document, branch));
  if (schema.type === 'object') return Object.keys(schema.properties ?? {}).length > 0 && schema.additionalProperties !== true;
  return typeof schema.type === 'string';
};

describe('OpenAPI documents', () => {
  let relay: RelayProcess;
  let publicDoc: any;
  let accountDoc: any;

  beforeAll(async () => {
    relay = await startRelayProcess();
    publicDoc = await (await fetch(`${relay.url}/docs/json`)).json();
    accountDoc = await (await fetch(`${relay.url}/docs/account.json`)).json();
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
  });

  it('the account API passes them with one warning: a followed sign-in link answers a redirect (303), never 2XX', async () => {
    const problems = await lint(accountDoc);
    expect(problems.map((p) => [p.severity, p.ruleId, p.location[0]?.pointer])).toEqual([['warn', 'operation-2xx-response', '#/paths/~1dashboard~1auth~1email~1{link}/get/responses']]);
  }, 60_000);

  it('the public API passes them with one warning: health answers no 4xx (it takes no input: 200 or 503)', async () => {
    const problems = await lint(publicDoc);
    expect(problems.map((p) => [p.severity, p.ruleId, p.location[0]?.pointer])).toEqual([['warn', 'operation-4xx-response', '#/paths/~1api~1v1~1health/get/responses']]);
  }, 60_000);

  it('gives every operation a unique operationId, and covers the account lifecycle routes', () => {
    const all = [...operations(publicDoc), ...operations(accountDoc)];
    const ids = all.map((o) => o.operationId);
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z0-9]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(operations(accountDoc).map((o) => `${o.method.toUpperCase()} ${o.route}`)).toEqual(
      expect.arrayContaining([
        'POST /dashboard/auth/email',
        'GET /dashboard/auth/email/{link}',
        'POST /dashboard/auth/email/{link}',
        'GET /dashboard/auth/messenger/{pollToken}',
        'POST /dashboard/auth/messenger/{pollToken}',
        'POST /dashboard/group/invite-link',
        'POST /dashboard/auth/recover',
        'POST /dashboard/api/dashboard/recovery-code',
        'GET /dashboard/api/dashboard/notification-preferences',
        'POST /dashboard/api/dashboard/notification-preferences',
        'GET /dashboard/api/dashboard/group/members',
        'POST /dashboard/api/dashboard/group/members/add',
      ]),
    );
    expect(publicDoc.paths['/api/v1/messages/poll'].get.operationId).toBe('getMessagesPoll');
    expect(accountDoc.paths['/dashboard/api/dashboard/apps/{appId}'].delete.operationId).toBe('deleteAppsByAppId');
    expect(accountDoc.components.securitySchemes.session).toEqual({ type: 'apiKey', in: 'cookie', name: 'relay_session', description: 'The dashboard session (docs/sign-in.md)' });
  });

  it('declares the shape of every success answer (issue 25: 6 of the account API’s 38 were)', () => {
    for (const document of [accountDoc, publicDoc]) {
      const answers = successAnswers(document);
      const untyped = answers.filter(({ schema }) => !isTyped(document, schema)).map(({ answer }) => answer);
      expect(untyped).toEqual([]);
    }
    // 41 operations (issue 47 added the POSTs that sign in with a link or a poll token, and the one
    // that turns the invite link on, whose GET now only reads); the four member changes and turning
    // the invite link on answer 200 when the messenger carried the change out, 202 while it has not.
    expect(successAnswers(accountDoc)).toHaveLength(46);
    const app = accountDoc.components.schemas.App;
    expect(app.required).toEqual(expect.arrayContaining(['id', 'messengers']));
    expect(accountDoc.components.schemas.AppMessenger.required).toContain('id');
    expect(accountDoc.components.schemas.CredentialWithSecret.required).toEqual(expect.arrayContaining(['credentialId', 'secret']));
  });

  it("declares the public API's parameters and send item as the interface has them", () => {
    const parameters = (route: string) => Object.fromEntries((publicDoc.paths[route].get.parameters as Array<{ name: string; in: string; schema: unknown }>).map((p) => [`${p.in} ${p.name}`, p.schema]));
    expect(parameters('/api/v1/messages/poll')).toEqual({ 'query limit': { type: 'integer', minimum: 1, maximum: 50, default: 10 } });
    expect(parameters('/api/v1/events')).toEqual({
      'query after': { type: 'string', pattern: '^\\d{1,19}$' },
      'query follow': { type: 'string', enum: ['true', 'false'], default: 'true' },
      'header last-event-id': { type: 'string', pattern: '^\\d{1,19}$' },
    });
    expect(Object.keys(publicDoc.paths['/api/v1/events'].get.responses['200'].content)).toEqual(['text/event-stream']);
    const item = publicDoc.components.schemas.SendMessageInput;
    expect(item.required).toEqual(['appId', 'contactId', 'messenger', 'message']);
    expect(item.properties.messenger.enum).toEqual(['signal', 'simplex', 'session']);
  });
});
