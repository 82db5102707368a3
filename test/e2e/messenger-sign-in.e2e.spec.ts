/**
 * Messenger contacts of a user, end to end through the dashboard layer and the simulator: a
 * contact linked with `/link CODE`, sign-in with `/signin CODE` from it (followed by GET, signed in
 * by the POST of the browser that asked), reuse and expiry of codes, a refused code that ends,
 * a contact linked to nobody, unlinking, another user's links refused, and alerts that reach the
 * linked contact through the operator's notification app as the preferences say.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createApp, createKey, dashboard, pollMessages, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { startSmtpInbox, type SmtpInbox } from '../support/smtp-inbox.ts';

const CONTACT = '+15550400001';
const STRANGER = '+15550400999';
const USER_EMAIL = 'linked.user@example.com';

describe('messenger sign-in and linked contacts', () => {
  let smtp: SmtpInbox;
  let relay: RelayProcess;
  let operator: Account;
  let user: Account;
  let botApp: string;
  let botKey: string;

  const auth = (method: string, path: string, options: { cookie?: string; body?: unknown } = {}) =>
    fetch(`${relay.url}/dashboard/auth${path}`, {
      method,
      headers: { ...(options.cookie ? { cookie: options.cookie } : {}), ...(options.body !== undefined || method === 'DELETE' ? { 'content-type': 'application/json' } : {}) },
      ...(options.body !== undefined ? { body: JSON.stringify(options.body) } : {}),
    });
  const json = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
  // The proxy takes a state-changing request only as JSON (its same-origin rule): so does a DELETE.
  /** A contact writes to the bot of the operator's app on Signal. */
  const send = async (contact: string, text: string) => {
    codesSeen.push(text.replace(/^\/\w+ /, ''));
    const result = await relay.cli(['simulate', 'inbound', '--app', botApp, '--messenger', 'signal', '--contact', contact, '--text', text]);
    expect(result.code, result.stderr).toBe(0);
    return JSON.parse(result.stdout.trim().split('\n').at(-1)!) as { kind: string; code: { kind: string; reason?: string } };
  };
  const outboxTo = async (contact: string) =>
    (await relay.cli(['simulate', 'outbox', '--contact', contact])).stdout
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { text: string; ok: boolean; messenger: string });
  const codesSeen: string[] = [];
  const linkContact = async (account: Account, contact: string) => {
    const asked = await json(await auth('POST', '/contacts/link', { cookie: account.cookie }));
    expect(asked.status).toBe(202);
    expect(await send(contact, asked.body.data.command)).toMatchObject({ kind: 'received', code: { kind: 'linked' } });
    return asked.body.data as { linkId: string; code: string };
  };

  beforeAll(async () => {
    smtp = await startSmtpInbox();
    // The notification app must exist before Relay is told its id: made on a first start, then Relay starts again with it.
    const first = await startRelayProcess({ env: { SMTP_URL: smtp.url } });
    operator = await createAccount(first, 'operator@example.com');
    botApp = (await createApp(first, operator, ['signal', 'simplex'], 'Relay notifications')).appId;
    botKey = (await createKey(first, operator, [botApp])).secret;
    await first.stop();
    relay = await startRelayProcess({ dataDir: first.dataDir, env: { SMTP_URL: smtp.url, NOTIFICATION_APP_ID: botApp, MESSENGER_CODE_TTL_SECONDS: '6' } });
    user = await createAccount(relay, USER_EMAIL);
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await smtp?.close();
  });

  it('links a contact that sends /link CODE to a bot, and the bot still sees the command on poll', async () => {
    const asked = await json(await auth('POST', '/contacts/link', { cookie: user.cookie }));
    expect(asked).toEqual({
      status: 202,
      body: { success: true, data: { linkId: expect.stringMatching(/^[0-9a-f]{32}$/), code: expect.stringMatching(/^[0-9A-HJKMNP-TV-Z]{4}-[0-9A-HJKMNP-TV-Z]{4}$/), command: expect.any(String), expiresAt: expect.any(String) } },
    });
    const { linkId, code, command } = asked.body.data;
    expect(command).toBe(`/link ${code}`);
    expect(await json(await auth('GET', `/contacts/link/${linkId}`, { cookie: user.cookie }))).toMatchObject({ status: 200, body: { success: true, data: { linkId, status: 'pending', refused: [] } } });

    // Typed the way people type it: lower case, a space for the dash.
    expect(await send(CONTACT, `/link ${code.toLowerCase().replace('-', ' ')}`)).toMatchObject({ kind: 'received', code: { kind: 'linked' } });
    const status = await json(await auth('GET', `/contacts/link/${linkId}`, { cookie: user.cookie }));
    expect(status).toMatchObject({ status: 200, body: { data: { status: 'linked', contact: { id: linkId, messenger: 'signal' } } } });
    expect(await json(await auth('GET', '/contacts', { cookie: user.cookie }))).toEqual({
      status: 200,
      body: { items: [{ id: linkId, messenger: 'signal', contactId: CONTACT, linkedAt: expect.any(String) }] },
    });

    const [polled] = await pollMessages(relay, botKey, 1);
    expect(polled).toMatchObject({ appId: botApp, messenger: 'signal', contactId: CONTACT, isCommand: true, command: 'link' });

    // The code is spent: another contact sending it is refused, and links nothing.
    expect((await send(STRANGER, command)).code).toEqual({ kind: 'refused', reason: 'used' });
    expect((await json(await auth('GET', '/contacts', { cookie: user.cookie }))).body.items).toHaveLength(1);
  });

  it('signs in the browser that asked when a linked contact sends /signin CODE, once', async () => {
    const asked = await json(await auth('POST', '/messenger', { body: {} }));
    expect(asked).toEqual({
      status: 202,
      body: { success: true, data: { code: expect.any(String), command: expect.stringMatching(/^\/signin /), pollToken: expect.stringMatching(/^[0-9a-f]{32}\.[A-Za-z0-9_-]{43}$/), expiresAt: expect.any(String) } },
    });
    const { command, pollToken } = asked.body.data;
    const poll = () => auth('GET', `/messenger/${pollToken}`);
    const follow = () => auth('POST', `/messenger/${pollToken}`);
    expect(await json(await poll())).toEqual({ status: 200, body: { success: true, data: { status: 'pending', expiresAt: asked.body.data.expiresAt } } });
    expect(await json(await follow())).toEqual({ status: 200, body: { success: true, data: { status: 'pending', expiresAt: asked.body.data.expiresAt } } });

    expect((await send(CONTACT, command)).code).toEqual({ kind: 'confirmed' });
    // A GET says so and signs nobody in (issue 47); the POST of the browser that asked signs in.
    const polled = await poll();
    expect(polled.headers.get('set-cookie')).toBeNull();
    expect(await json(polled)).toEqual({ status: 200, body: { success: true, data: { status: 'confirmed', expiresAt: asked.body.data.expiresAt } } });
    const signedIn = await follow();
    expect(signedIn.status).toBe(200);
    const cookie = signedIn.headers.get('set-cookie')!;
    expect(cookie).toMatch(/^relay_session=rls_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=2592000; HttpOnly; SameSite=Lax$/);
    expect(await signedIn.json()).toEqual({ success: true, data: { status: 'signed-in', sessionId: expect.any(String) } });
    const me = await fetch(`${relay.url}/dashboard/api/dashboard/user`, { headers: { cookie: cookie.split(';')[0]! } });
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ email: USER_EMAIL });

    expect(await json(await follow())).toEqual({ status: 400, body: { success: false, error: 'The code was used already: ask for a new one' } });
    expect(await json(await poll())).toEqual({ status: 400, body: { success: false, error: 'The code was used already: ask for a new one' } });
    expect(await json(await auth('GET', `/messenger/${pollToken.slice(0, 33)}${'A'.repeat(43)}`))).toEqual({ status: 400, body: { success: false, error: 'This sign-in is not valid' } });
    expect(await json(await auth('POST', `/messenger/${pollToken.slice(0, 33)}${'A'.repeat(43)}`))).toEqual({ status: 400, body: { success: false, error: 'This sign-in is not valid' } });
  });

  it('refuses a sign-in from a contact linked to nobody', async () => {
    const asked = await json(await auth('POST', '/messenger', { body: {} }));
    expect((await send(STRANGER, asked.body.data.command)).code).toEqual({ kind: 'confirmed' });
    const notLinked = { status: 400, body: { success: false, error: 'The contact that sent the code is not linked to a Relay account: sign in another way and link it first' } };
    expect(await json(await auth('GET', `/messenger/${asked.body.data.pollToken}`))).toEqual(notLinked);
    expect(await json(await auth('POST', `/messenger/${asked.body.data.pollToken}`))).toEqual(notLinked);
  });

  it('refuses a code sent after it expired', async () => {
    const asked = await json(await auth('POST', '/messenger', { body: {} }));
    const { command, pollToken, expiresAt } = asked.body.data;
    await waitFor(() => (Date.now() > Date.parse(expiresAt) ? true : undefined), 15_000, 'the code to expire');
    expect((await send(CONTACT, command)).code).toEqual({ kind: 'refused', reason: 'expired' });
    expect(await json(await auth('POST', `/messenger/${pollToken}`))).toEqual({ status: 400, body: { success: false, error: 'The code has expired: ask for a new one' } });
  });

  it('sends alerts to the linked contact through the notification app, as the preferences say', async () => {
    const on = await dashboard(relay, user, 'POST', '/notification-preferences', { preferences: { signal: { credentials: true } } });
    expect(on.status).toBe(200);
    const app = (await createApp(relay, user, ['signal'], 'Watched bot')).appId;
    await createKey(relay, user, [app]);
    const alerts = await waitFor(async () => {
      const found = (await outboxTo(CONTACT)).filter((d) => d.text.startsWith('A credential was created'));
      return found.length > 0 ? found : undefined;
    }, 15_000, 'the alert on Signal');
    expect(alerts).toEqual([expect.objectContaining({ messenger: 'signal', ok: true, text: expect.stringContaining('The api-key credential "api-key key"') })]);
    await smtp.next(USER_EMAIL, { matches: (m) => m.subject === 'A credential was created: api-key key' });
    const events = await waitFor(async () => {
      const lines = (await relay.cli(['events', '--category', 'alert'])).stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      const sent = lines.filter((e: any) => e.data.userId !== undefined && e.data.category === 'credentials' && e.data.channel === 'signal');
      return sent.length > 0 ? sent : undefined;
    }, 10_000, 'the alert event');
    expect(events[0]).toMatchObject({ type: 'AlertSent', data: { channel: 'signal', messageIds: [expect.stringMatching(/^[0-9a-f]{32}$/)] } });

    // Turned off for Signal: the next credential is mailed only.
    expect((await dashboard(relay, user, 'POST', '/notification-preferences', { preferences: { signal: { credentials: false } } })).status).toBe(200);
    const mailsBefore = smtp.mails.length;
    await createKey(relay, user, [app]);
    await smtp.next(USER_EMAIL, { after: mailsBefore, matches: (m) => m.subject === 'A credential was created: api-key key' });
    // Mailed after the Signal alert would have been queued: none came.
    expect((await outboxTo(CONTACT)).filter((d) => d.text.startsWith('A credential was created'))).toHaveLength(1);
  });

  it("refuses another user's link and contact, and a request without a session", async () => {
    const other = await createAccount(relay, 'other.user@example.com');
    const [contact] = (await json(await auth('GET', '/contacts', { cookie: user.cookie }))).body.items;
    expect(await json(await auth('GET', `/contacts/link/${contact.id}`, { cookie: other.cookie }))).toEqual({ status: 400, body: { success: false, error: 'Link not found' } });
    expect(await json(await auth('DELETE', `/contacts/${contact.id}`, { cookie: other.cookie }))).toEqual({ status: 400, body: { success: false, error: 'Contact not found' } });
    expect(await json(await auth('GET', '/contacts', { cookie: other.cookie }))).toEqual({ status: 200, body: { items: [] } });
    expect(await json(await auth('GET', '/contacts'))).toEqual({ status: 400, body: { success: false, error: 'Session token is required' } });
    // A contact linked to one user cannot be linked to another; the refusal ends the code (issue 47):
    // the owner of the bot it was sent to cannot send it from a contact of theirs.
    const asked = await json(await auth('POST', '/contacts/link', { cookie: other.cookie }));
    expect((await send(CONTACT, asked.body.data.command)).code).toEqual({ kind: 'refused', reason: 'contact-linked-elsewhere' });
    expect((await send(STRANGER, asked.body.data.command)).code).toEqual({ kind: 'refused', reason: 'used' });
    expect(await json(await auth('GET', `/contacts/link/${asked.body.data.linkId}`, { cookie: other.cookie }))).toMatchObject({
      body: { data: { status: 'refused', refused: ['contact-linked-elsewhere', 'used'] } },
    });
    expect(await json(await auth('GET', '/contacts', { cookie: other.cookie }))).toEqual({ status: 200, body: { items: [] } });
  });

  it('unlinks a contact: its id is shredded, it signs in no more', async () => {
    const [contact] = (await json(await auth('GET', '/contacts', { cookie: user.cookie }))).body.items;
    expect(await json(await auth('DELETE', `/contacts/${contact.id}`, { cookie: user.cookie }))).toEqual({ status: 200, body: { success: true, data: { id: contact.id, unlinked: true } } });
    expect(await json(await auth('GET', '/contacts', { cookie: user.cookie }))).toEqual({ status: 200, body: { items: [] } });
    const history = (await relay.cli(['events', '--category', 'user'])).stdout;
    expect(history).toContain('MessengerContactUnlinked');
    expect(history).not.toContain(CONTACT);

    const asked = await json(await auth('POST', '/messenger', { body: {} }));
    expect((await send(CONTACT, asked.body.data.command)).code).toEqual({ kind: 'confirmed' });
    expect((await json(await auth('POST', `/messenger/${asked.body.data.pollToken}`))).status).toBe(400);
    // Linked again, it signs in again.
    await linkContact(user, CONTACT);
    expect((await json(await auth('GET', '/contacts', { cookie: user.cookie }))).body.items).toHaveLength(1);
  });

  it('keeps codes and contacts out of the history in clear', async () => {
    const all = (await relay.cli(['events'])).stdout;
    expect(all).not.toContain(CONTACT);
    expect(all).not.toContain(STRANGER);
    expect(all).toContain('MessengerCodeConfirmed');
    for (const code of codesSeen) expect(all).not.toContain(code);
  });
});
