/**
 * Clients generated from the account API's document, as a real Relay serves it, read what a
 * client needs without a cast: the app's `id`, its app-messengers' ids, a credential's `secret`.
 * - openapi-typescript (with openapi-fetch, as the dashboard uses them): a small flow type-checks
 *   under `strict`, a field the document does not declare does not, and the flow runs.
 * - openapi-generator's typescript-fetch (a Java jar from Maven Central, fetched with `mvn` at
 *   test time): the whole generated client compiles with `tsc --strict`, and one flow runs against
 *   Relay: create an app, create an API key for it, read its secret, verify the key on the public
 *   API. Under CI it must run; elsewhere it is skipped, saying why, when Maven or Java is missing.
 * The served documents are also the ones the code builds in-process (apps/boot/api-documents.ts), from which
 * scripts/generate-api-types.mjs writes the dashboard's types.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import openapiTS, { astToString, type OpenAPI3 } from 'openapi-typescript';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApiDocuments } from '../../apps/boot/api-documents.ts';
import { createAccount, type Account } from '../support/account-fixture.ts';
import { ROOT, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const run = promisify(execFile);

/** openapi-generator's command line, from Maven Central (one of the versions served there). */
const GENERATOR = 'org.openapitools:openapi-generator-cli:7.25.0';

/** A directory of its own for a generated client, with the repository's packages in reach. */
const workDir = (name: string) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `relay-${name}-`));
  fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  return dir;
};

/** Type-checks (and, with `outDir`, compiles) the given files; the diagnostics as lines. */
const compile = (files: string[], options: ts.CompilerOptions): string[] => {
  const program = ts.createProgram(files, { strict: true, target: ts.ScriptTarget.ES2022, skipLibCheck: true, ...options });
  const emitted = options.noEmit ? undefined : program.emit();
  return [...ts.getPreEmitDiagnostics(program), ...(emitted?.diagnostics ?? [])].map((d) => {
    const where = d.file && d.start !== undefined ? `${path.basename(d.file.fileName)}:${d.file.getLineAndCharacterOfPosition(d.start).line + 1} ` : '';
    return `${where}${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
  });
};

/** The jar of openapi-generator, fetched by Maven into its local repository and copied here; or why it is not to be had. */
const generatorJar = async (dir: string): Promise<{ jar: string } | { missing: string }> => {
  try {
    await run('java', ['-version']);
  } catch (error) {
    return { missing: `no Java to run openapi-generator (${(error as Error).message})` };
  }
  try {
    await run('mvn', ['-B', '-q', '-Dstyle.color=never', 'dependency:copy', `-Dartifact=${GENERATOR}`, `-DoutputDirectory=${dir}`], { timeout: 300_000 });
  } catch (error) {
    const { stdout = '', message } = error as { stdout?: string; message: string };
    return { missing: `Maven could not fetch ${GENERATOR}: ${stdout.trim().split('\n').slice(-3).join(' ') || message}` };
  }
  const jar = fs.readdirSync(dir).find((name) => name.endsWith('.jar'));
  return jar ? { jar: path.join(dir, jar) } : { missing: `Maven fetched no jar of ${GENERATOR}` };
};

/** The flow of the openapi-fetch client: every field read is typed by the document, no cast. */
const OPENAPI_FETCH_FLOW = `
import createClient from 'openapi-fetch';
import type { paths } from './account-api.ts';

const [baseUrl, cookie] = process.argv.slice(2) as [string, string];
const client = createClient<paths>({ baseUrl, headers: { cookie } });

const created = await client.POST('/dashboard/api/dashboard/apps', { body: { name: 'openapi-fetch client', protocol: ['signal', 'simplex'] } });
if (!created.data) throw new Error(created.error.error);
const appId: string = created.data.id;
const appMessengerIds: string[] = created.data.messengers.map((m) => m.id);
// Undeclared fields are errors: the answers are typed, not \`{ [key: string]: unknown }\`.
// @ts-expect-error: an app has no such field
created.data.appMessengerIdentifier;
// @ts-expect-error: nor an app-messenger
created.data.messengers[0]?.appMessengerId;

const key = await client.POST('/dashboard/api/dashboard/credentials', { body: { type: 'api-key', appIds: [appId], name: 'openapi-fetch key' } });
if (!key.data) throw new Error(key.error.error);
const secret: string = key.data.secret;
// @ts-expect-error: nor a credential
key.data.key;

const listed = await client.GET('/dashboard/api/dashboard/apps');
const messengers: Array<'signal' | 'simplex' | 'session'> = (listed.data?.items ?? []).flatMap((app) => app.messengers.map((m) => m.messenger));
console.log(JSON.stringify({ appId, appMessengerIds, secret, messengers }));
`;

/** The flow of the typescript-fetch client: the account API through the generated client, then the key verified with fetch. */
const TYPESCRIPT_FETCH_FLOW = `
import { Configuration, DefaultApi } from './index';

const [baseUrl, cookie] = process.argv.slice(2) as [string, string];
const api = new DefaultApi(new Configuration({ basePath: baseUrl, headers: { cookie } }));

const main = async () => {
  const app = await api.postApps({ postAppsRequest: { name: 'typescript-fetch client', protocol: ['signal'] } });
  const appId: string = app.id;
  const appMessengerIds: string[] = app.messengers.map((m) => m.id);
  const credential = await api.postCredentials({ postCredentialsRequest: { type: 'api-key', appIds: [appId], name: 'typescript-fetch key' } });
  const secret: string = credential.secret;
  // Undeclared fields are errors: the answers are models, not \`{ [key: string]: any }\`.
  // @ts-expect-error: an app has no such field
  app.appMessengerIdentifier;
  // @ts-expect-error: nor an app-messenger
  app.messengers[0]?.appMessengerId;
  // @ts-expect-error: nor a credential
  credential.key;
  const verified = await fetch(baseUrl + '/api/v1/auth/verify', { headers: { authorization: 'Bearer ' + secret } });
  console.log(JSON.stringify({ appId, appMessengerIds, credentialId: credential.credentialId, secret, verify: { status: verified.status, body: await verified.json() } }));
};
main().catch((error) => {
  console.error(error);
  process.exit(1);
});
`;

describe('clients generated from the OpenAPI documents', () => {
  let relay: RelayProcess;
  let account: Account;
  let accountDoc: OpenAPI3;
  const dirs: string[] = [];

  beforeAll(async () => {
    relay = await startRelayProcess();
    account = await createAccount(relay);
    accountDoc = (await (await fetch(`${relay.url}/docs/account.json`)).json()) as OpenAPI3;
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  const dashboardApps = async () => {
    const res = await fetch(`${relay.url}/dashboard/api/dashboard/apps`, { headers: { cookie: account.cookie } });
    return ((await res.json()) as { items: Array<{ id: string; messengers: Array<{ id: string }> }> }).items;
  };

  it('are generated from the documents the code builds (what the dashboard’s types come from)', async () => {
    const built = await buildApiDocuments();
    expect(built.account).toEqual(accountDoc);
    expect(built.public).toEqual(await (await fetch(`${relay.url}/docs/json`)).json());
  });

  it('openapi-typescript: a flow with openapi-fetch reads the app’s and app-messengers’ ids and the secret without a cast, and runs', async () => {
    const dir = workDir('openapi-fetch');
    dirs.push(dir);
    fs.writeFileSync(path.join(dir, 'account-api.ts'), astToString(await openapiTS(accountDoc, { silent: true })));
    fs.writeFileSync(path.join(dir, 'flow.ts'), OPENAPI_FETCH_FLOW);
    fs.writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
    const problems = compile([path.join(dir, 'flow.ts')], {
      noEmit: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      allowImportingTsExtensions: true,
      noUncheckedIndexedAccess: true,
      types: ['node'],
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    });
    expect(problems).toEqual([]);

    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'flow.ts', relay.url, account.cookie], { cwd: dir });
    const result = JSON.parse(stdout) as { appId: string; appMessengerIds: string[]; secret: string; messengers: string[] };
    expect(result.secret).toMatch(/^rly_/);
    const app = (await dashboardApps()).find((a) => a.id === result.appId);
    expect(app?.messengers.map((m) => m.id).sort()).toEqual([...result.appMessengerIds].sort());
    expect(result.messengers).toEqual(expect.arrayContaining(['signal', 'simplex']));
  }, 120_000);

  it('openapi-generator typescript-fetch: the generated client compiles and runs a flow that ends in a verified key', async (context) => {
    const dir = workDir('typescript-fetch');
    dirs.push(dir);
    const found = await generatorJar(path.join(dir, 'jar'));
    if ('missing' in found) {
      // Under CI this test must run: a missing generator is a failure there, not a skip.
      if (process.env.CI) throw new Error(found.missing);
      context.skip(found.missing);
      return;
    }
    const document = path.join(dir, 'account.json');
    fs.writeFileSync(document, JSON.stringify(accountDoc));
    const client = path.join(dir, 'client');
    await run('java', ['-jar', found.jar, 'generate', '-g', 'typescript-fetch', '-i', document, '-o', client, '--additional-properties=supportsES6=true'], { timeout: 180_000 });
    fs.writeFileSync(path.join(client, 'flow.ts'), TYPESCRIPT_FETCH_FLOW);
    fs.writeFileSync(path.join(client, 'package.json'), '{ "type": "commonjs" }\n');

    // The whole client, not only what the flow imports.
    const sources = fs.readdirSync(client, { recursive: true, encoding: 'utf8' }).filter((file) => file.endsWith('.ts')).map((file) => path.join(client, file));
    expect(sources.length).toBeGreaterThan(20);
    const problems = compile(sources, {
      module: ts.ModuleKind.CommonJS,
      moduleResolution: ts.ModuleResolutionKind.Node10,
      outDir: path.join(client, 'out'),
      types: ['node'],
      lib: ['lib.es2022.d.ts', 'lib.dom.d.ts'],
    });
    expect(problems).toEqual([]);

    const { stdout } = await run(process.execPath, [path.join(client, 'out/flow.js'), relay.url, account.cookie], { cwd: client });
    const result = JSON.parse(stdout) as { appId: string; appMessengerIds: string[]; credentialId: string; secret: string; verify: { status: number; body: unknown } };
    expect(result.verify).toEqual({ status: 200, body: { valid: true, appIds: [result.appId] } });
    const app = (await dashboardApps()).find((a) => a.id === result.appId);
    expect(app?.messengers.map((m) => m.id)).toEqual(result.appMessengerIds);
    expect(result.credentialId).toMatch(/^cred_/);
  }, 300_000);
});
