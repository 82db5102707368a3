/**
 * Notification preferences and the alerts they choose, end to end with a real SMTP server in the
 * test: the defaults, a change in the interface's shape taking effect for the next alert, and
 * alerts for a new sign-in, a credential, and a message given up on; each alert an event.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { startSmtpInbox, type SmtpInbox } from '../support/smtp-inbox.ts';

const EMAIL = 'owner@example.com';

describe('notification preferences and alerts', () => {
  let smtp: SmtpInbox;
  let relay: RelayProcess;
  let account: Account;

  beforeAll(async () => {
    smtp = await startSmtpInbox();
    relay = await startRelayProcess({ env: { SMTP_URL: smtp.url, DELIVERY_MAX_ATTEMPTS: '1' } });
    account = await createAccount(relay, EMAIL);
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await smtp?.close();
  });

  const preferences = () => dashboard(relay, account, 'GET', '/notification-preferences');

  it('has every category on for e-mail and off for messengers until the user says otherwise', async () => {
    const categories = ['message-abandoned', 'messenger-health', 'sign-in', 'credentials', 'invoices'];
    const all = (on: boolean) => Object.fromEntries(categories.map((c) => [c, on]));
    expect(await preferences()).toEqual({
      status: 200,
      body: { categories, channels: ['email', 'signal', 'simplex', 'session'], preferences: { email: all(true), signal: all(false), simplex: all(false), session: all(false) } },
    });
  });

  it('mails the owner when a credential is created and when a message is given up on, each alert an event', async () => {
    const appId = (await createApp(relay, account, ['signal'], 'Alerting bot')).appId;
    const { secret } = await createKey(relay, account, [appId]);
    const credentialMail = await smtp.next(EMAIL, { matches: (m) => m.subject === 'A credential was created: api-key key' });
    expect(credentialMail.text).toContain('The api-key credential "api-key key"');
    expect(credentialMail.text).not.toContain(secret);

    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550100009', '--permanent'])).code).toBe(0);
    const sent = await api(relay, 'POST', '/messages/send', { key: secret, body: { messages: [{ appId, messenger: 'signal', contactId: '+15550100009', message: 'a private text' }] } });
    expect(sent.status).toBe(202);
    const abandoned = await smtp.next(EMAIL, { matches: (m) => m.subject === 'Relay gave up on a message of Alerting bot' });
    expect(abandoned.text).toMatch(/on signal after 1 attempts/);
    expect(abandoned.text).not.toContain('a private text');
    expect(abandoned.text).not.toContain('+15550100009');
    const events = await waitFor(async () => {
      const out = (await relay.cli(['events', '--category', 'alert'])).stdout.trim();
      const lines = out === '' ? [] : out.split('\n').map((l) => JSON.parse(l));
      return lines.some((e: { data: { category: string } }) => e.data.category === 'message-abandoned') ? lines : undefined;
    }, 10_000, 'the alert events');
    expect(events.map((e: { type: string; data: { category: string; channel: string } }) => [e.type, e.data.category, e.data.channel])).toEqual(
      expect.arrayContaining([
        ['AlertSent', 'credentials', 'email'],
        ['AlertSent', 'message-abandoned', 'email'],
      ]),
    );
  });

  it('takes a change at once: a category turned off is not mailed any more', async () => {
    const changed = await dashboard(relay, account, 'POST', '/notification-preferences', { preferences: { email: { credentials: false }, signal: { 'sign-in': true } } });
    expect(changed.status).toBe(200);
    expect(changed.body.preferences.email).toMatchObject({ credentials: false, 'sign-in': true });
    expect(changed.body.preferences.signal['sign-in']).toBe(true);
    expect((await preferences()).body).toEqual(changed.body);

    const before = smtp.mails.length;
    await createKey(relay, account, [(await createApp(relay, account, ['signal'], 'Quiet bot')).appId]);
    // A sign-in still alerts: once it arrived, the credential made before it would have too.
    expect((await relay.cli(['session', 'create', '--email', EMAIL])).code).toBe(0);
    await smtp.next(EMAIL, { after: before, matches: (m) => m.subject === 'New sign-in to your Relay account' });
    expect(smtp.mails.slice(before).map((m) => m.subject)).toEqual(['New sign-in to your Relay account']);
  });

  it('refuses preferences it does not know, in the interface shapes', async () => {
    expect(await dashboard(relay, account, 'POST', '/notification-preferences', { preferences: { fax: { 'sign-in': true } } })).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid preferences: unknown channel "fax". Channels: email, signal, simplex, session' },
    });
    expect(await dashboard(relay, account, 'POST', '/notification-preferences', { preferences: { email: { weather: true } } })).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid preferences: unknown category "weather". Categories: message-abandoned, messenger-health, sign-in, credentials, invoices' },
    });
    expect(await dashboard(relay, account, 'POST', '/notification-preferences', { preferences: { email: { credentials: 'yes' } } })).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid preferences: email.credentials must be true or false' },
    });
  });
});
