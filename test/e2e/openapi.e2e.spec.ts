/**
 * Both OpenAPI documents, as the real service serves them, pass Redocly's recommended lint rules
 * (what a client generator needs): no error, and the one warning kept is justified below. Every
 * operation has a unique operationId, and the routes of the account lifecycle are in.
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

  it('the account API passes the recommended rules without an error or a warning', async () => {
    expect(await lint(accountDoc)).toEqual([]);
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
});
