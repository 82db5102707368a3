import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

let relay: RelayProcess;
let account: Account;

beforeAll(async () => {
  relay = await startRelayProcess();
  account = await createAccount(relay);
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

describe('OpenAPI documents', () => {
  it('serves the public API’s document, generated from the zod schemas, with a UI', async () => {
    const doc = (await (await fetch(`${relay.url}/docs/json`)).json()) as any;
    expect(doc.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.paths).sort()).toEqual(['/api/v1/auth/verify', '/api/v1/events', '/api/v1/health', '/api/v1/messages/poll', '/api/v1/messages/send']);
    expect(Object.keys(doc.components.schemas)).toEqual(expect.arrayContaining(['SendMessageInput', 'PolledMessage', 'FailedMessage', 'SuccessfulMessage', 'Error']));
    const ui = await fetch(`${relay.url}/docs`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toContain('text/html');
  });

  it('serves the account API’s document', async () => {
    const doc = (await (await fetch(`${relay.url}/docs/account.json`)).json()) as any;
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/dashboard/api/dashboard/apps', '/dashboard/api/dashboard/credentials', '/dashboard/api/dashboard/app-messengers/{id}']),
    );
    expect(doc.paths['/dashboard/api/dashboard/apps'].post.requestBody).toBeDefined();
  });
});

describe('secrets at rest', () => {
  it('neither the event history nor any data file holds a key in clear', async () => {
    const { appId } = await createApp(relay, account, ['signal']);
    const { secret } = await createKey(relay, account, [appId]);
    const history = await relay.cli(['events', '--category', 'credential']);
    expect(history.code).toBe(0);
    expect(history.stdout).toContain('CredentialCreated');
    expect(history.stdout).not.toContain(secret);
    // Not even sealed: `relay events` shows what every history path shows (docs/events.md).
    expect(history.stdout).not.toContain('secretEncrypted');
    expect(history.stdout).not.toContain('keyHash');
    // Each event names who caused it and the request it came from.
    const created = history.stdout.trim().split('\n').map((line) => JSON.parse(line)).find((e) => e.type === 'CredentialCreated' && e.data.keyPreview === `${secret.slice(0, 8)}…`);
    expect(created.metadata).toEqual({ actor: expect.stringMatching(/^user:usr_[0-9a-f]{24}$/), correlationId: expect.stringMatching(/^[0-9a-f-]{36}$/) });
    const fs = await import('node:fs');
    for (const file of fs.readdirSync(relay.dataDir)) {
      const bytes = fs.readFileSync(`${relay.dataDir}/${file}`);
      expect(bytes.includes(Buffer.from(secret)), file).toBe(false);
    }
    expect(relay.output()).not.toContain(secret);
  });
});

describe('lifecycle', () => {
  it('a bad configuration value stops start-up with one line naming the variable', async () => {
    const result = await relay.cli(['start', '--port', 'eighty']);
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n')).toEqual(['relay: Invalid configuration PORT="eighty": Invalid input: expected number, received NaN']);
  });

  it('stops cleanly on SIGTERM; inbound injected while it is down is there after a restart', async () => {
    const { appId } = await createApp(relay, account, ['simplex'], 'Survivor');
    const { secret } = await createKey(relay, account, [appId]);
    expect(await relay.stop()).toBe(0);
    const injected = await relay.cli(['simulate', 'inbound', '--app', appId, '--messenger', 'simplex', '--contact', '42', '--text', 'while you were away']);
    expect(injected.code, injected.stderr).toBe(0);
    relay = await startRelayProcess({ dataDir: relay.dataDir });
    const res = await fetch(`${relay.url}/dashboard/api/dashboard/apps`, { headers: { cookie: account.cookie } });
    expect(((await res.json()) as any).items.map((a: any) => a.id)).toContain(appId);
    const polled = await waitFor(async () => {
      const poll = await api(relay, 'GET', '/messages/poll', { key: secret });
      return poll.body.count > 0 ? poll.body.messages : undefined;
    });
    expect(polled.map((m: any) => [m.contactId, m.content])).toEqual([['42', 'while you were away']]);
  });
});
