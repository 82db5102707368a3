import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

/**
 * One free-tier key must not be able to fill the disk or the memory: every free-text field of
 * both APIs has a cap, text no store can keep is refused at the edge (never a 5xx), and a user
 * has a bounded number of keys and apps.
 */
let relay: RelayProcess;
let account: Account;
let appId: string;
let key: string;

beforeAll(async () => {
  relay = await startRelayProcess({ env: { MAX_CREDENTIALS_PER_USER: '3', MAX_APPS_PER_USER: '3', RATE_LIMIT_SEND_FREE_PER_MIN: '100000' } });
  account = await createAccount(relay);
  appId = (await createApp(relay, account, ['signal'])).appId;
  key = (await createKey(relay, account, [appId])).secret;
});
afterAll(async () => {
  await relay?.stop();
  await relay?.cleanup();
});

const send = (messages: unknown[]) => api(relay, 'POST', '/messages/send', { key, body: { messages } });
const item = (overrides: Record<string, unknown> = {}) => ({ appId, contactId: '+15550001', messenger: 'signal', message: 'hello', ...overrides });
const dirSize = (dir: string): number =>
  fs.readdirSync(dir, { withFileTypes: true }).reduce((sum, entry) => {
    const file = path.join(dir, entry.name);
    return sum + (entry.isDirectory() ? dirSize(file) : fs.statSync(file).size);
  }, 0);

describe('send: per-message caps', () => {
  it('refuses a 1.9 MB contact id per message and stores nothing of it', async () => {
    const before = dirSize(relay.dataDir);
    const huge = `+1${'5'.repeat(1_900_000)}`;
    for (let i = 0; i < 5; i++) {
      const res = await send([item({ contactId: huge })]);
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('No valid messages to send');
      expect(res.body.failedMessages).toHaveLength(1);
      expect(res.body.failedMessages[0].error).toBe('ContactId exceeds 256 character limit');
      expect(res.body.totalAccepted).toBe(0);
    }
    // The WAL may grow by a page or two for unrelated writes; 5 × 1.9 MB would be 9.5 MB.
    expect(dirSize(relay.dataDir) - before).toBeLessThan(1_000_000);
  });

  it('valid items of a batch go through beside refused ones', async () => {
    const res = await send([item(), item({ groupId: 'g'.repeat(257) }), item({ contactId: '+1555\u0000' }), item({ message: 'half \ud83d' })]);
    expect(res.status).toBe(202);
    expect(res.body.totalAccepted).toBe(1);
    expect(res.body.failedMessages.map((f: { error: string }) => f.error)).toEqual([
      'GroupId exceeds 256 character limit',
      'ContactId contains invalid characters',
      'Message contains invalid characters',
    ]);
  });

  it('counts characters: 10,000 emoji are one message, 10,001 are too many', async () => {
    const ok = await send([item({ message: '😀'.repeat(10_000) })]);
    expect(ok.status).toBe(202);
    const tooLong = await send([item({ message: '😀'.repeat(10_001) })]);
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.failedMessages[0].error).toBe('Message exceeds 10000 character limit');
  });
});

describe('account API: caps and text rules', () => {
  it('names: at most 100 characters, one line, no NUL (400, never 5xx)', async () => {
    expect(await dashboard(relay, account, 'POST', '/user', { name: 'n'.repeat(101) })).toEqual({
      status: 400,
      body: { success: false, error: 'Name exceeds 100 character limit' },
    });
    expect(await dashboard(relay, account, 'POST', '/user', { name: 'nul\u0000name' })).toEqual({
      status: 400,
      body: { success: false, error: 'Name contains invalid characters' },
    });
    expect(await dashboard(relay, account, 'POST', '/apps', { name: 'bad \ud800 app', protocol: ['signal'] })).toEqual({
      status: 400,
      body: { success: false, error: 'Name contains invalid characters' },
    });
  });

  it('webhook URLs: https, no credentials in them, no local or private targets, bounded', async () => {
    const update = (webhookUrl: string) => dashboard(relay, account, 'POST', '/apps/update', { appId, webhookUrl });
    expect(await update('http://hooks.example.com/')).toEqual({ status: 400, body: { success: false, error: 'Invalid webhookUrl: must use https (an operator allows http with WEBHOOK_ALLOW_LOCAL=true)' } });
    expect(await update('https://user:pw@hooks.example.com/')).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid webhookUrl: must not carry a user name or password' },
    });
    for (const url of ['https://127.0.0.1/', 'https://10.0.0.1/', 'https://169.254.169.254/', 'https://[::1]/'])
      expect(await update(url)).toEqual({
        status: 400,
        body: { success: false, error: 'Invalid webhookUrl: must not point to a loopback, private or link-local address (an operator allows it with WEBHOOK_ALLOW_LOCAL=true)' },
      });
    expect(await update(`https://hooks.example.com/${'a'.repeat(100_000)}`)).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid webhookUrl: must be at most 2048 characters' },
    });
    const ok = await update('https://hooks.example.com/relay');
    expect(ok.status).toBe(200);
    expect(ok.body.webhookUrl).toBe('https://hooks.example.com/relay');
  });

  it('key header names: a token, not a standard header, no CR or LF', async () => {
    const create = (webhookAuthHeaderName: string) =>
      dashboard(relay, account, 'POST', '/credentials', {
        type: 'webhook-header',
        appIds: [appId],
        name: 'hook',
        webhookUrl: 'https://hooks.example.com/',
        webhookAuthHeaderName,
      });
    expect(await create('user-agent')).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid webhookAuthHeaderName: must not be a standard HTTP header' },
    });
    expect(await create('x-key\r\nx-evil: 1')).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid webhookAuthHeaderName: must be an HTTP header name' },
    });
  });

  it(`at most MAX_CREDENTIALS_PER_USER keys and MAX_APPS_PER_USER apps (3 here)`, async () => {
    const other = await createAccount(relay);
    const apps: string[] = [];
    for (let i = 0; i < 3; i++) apps.push((await dashboard(relay, other, 'POST', '/apps', { name: `app ${i}`, protocol: ['signal'] })).body.id);
    expect(await dashboard(relay, other, 'POST', '/apps', { name: 'one more', protocol: ['signal'] })).toEqual({
      status: 400,
      body: { success: false, error: 'App limit reached: at most 3 per user' },
    });
    for (let i = 0; i < 3; i++) await createKey(relay, other, [apps[0]!]);
    expect(await dashboard(relay, other, 'POST', '/credentials', { type: 'api-key', appIds: [apps[0]], name: 'fourth' })).toEqual({
      status: 400,
      body: { success: false, error: 'Credential limit reached: at most 3 per user' },
    });
    // Deleting one makes room for one.
    const { body } = await dashboard(relay, other, 'GET', '/credentials');
    expect((await dashboard(relay, other, 'DELETE', `/credentials/${body.items[0].credentialId}`)).status).toBe(200);
    expect((await dashboard(relay, other, 'POST', '/credentials', { type: 'api-key', appIds: [apps[0]], name: 'again' })).status).toBe(200);
  });
});
