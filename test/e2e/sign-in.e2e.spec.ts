/**
 * E-mail sign-in end to end: the link goes through a real SMTP server running in the test
 * (smtp-server) and is read out of the received mail (mailparser); following it opens the page
 * whose POST signs in once, before it expires, with the interface's session cookie (a GET never
 * signs in: issue 47); attempts are limited; nothing of the link is logged.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { startSmtpInbox, type SmtpInbox } from '../support/smtp-inbox.ts';

describe('e-mail sign-in', () => {
  let smtp: SmtpInbox;
  let relay: RelayProcess;
  let inbox: SmtpInbox['mails'];

  const ask = (email: string, headers: Record<string, string> = {}) =>
    fetch(`${relay.url}/dashboard/auth/email`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ email }) });
  const linkFor = async (to: string, after = 0) => {
    const mail = await smtp.next(to, { after, matches: (m) => m.subject === 'Your Relay sign-in link' });
    const link = /https?:\/\/\S+\/dashboard\/auth\/email\/[0-9a-f]{24}\.[A-Za-z0-9_-]{43}/.exec(mail.text)?.[0];
    expect(link, mail.text).toBeDefined();
    return new URL(link!).pathname;
  };
  const follow = (path: string, headers: Record<string, string> = {}) => fetch(`${relay.url}${path}`, { redirect: 'manual', headers });
  /** What the page the link opens does when its button is pressed: POST the link. */
  const signIn = (path: string, headers: Record<string, string> = {}) => fetch(`${relay.url}${path}`, { method: 'POST', headers });
  const cookieOf = (res: Response) => res.headers.get('set-cookie');

  beforeAll(async () => {
    smtp = await startSmtpInbox();
    inbox = smtp.mails;
    relay = await startRelayProcess({
      env: { SMTP_URL: smtp.url, MAIL_FROM: 'Relay <relay@example.com>', SIGN_IN_LINK_TTL_SECONDS: '3', SIGN_IN_PER_ADDRESS: '3', TRUST_PROXY: 'true', LOG_LEVEL: 'debug' },
    });
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await smtp?.close();
  });

  it('mails a link to any address, which opens the page whose POST signs a new user in once, with the session cookie', async () => {
    const asked = await ask('  New.User@Example.com ');
    expect(asked.status).toBe(202);
    expect(await asked.json()).toEqual({ success: true, data: { expiresAt: expect.any(String) } });
    const path = await linkFor('new.user@example.com');

    const followed = await follow(path);
    expect({ status: followed.status, location: followed.headers.get('location'), cookie: cookieOf(followed) }).toEqual({ status: 303, location: `/dashboard/sign-in#${path.split('/').at(-1)}`, cookie: null });
    const signedIn = await signIn(path);
    expect(signedIn.status).toBe(200);
    expect(await signedIn.json()).toEqual({ success: true, data: { signedIn: true, sessionId: expect.any(String) } });
    const cookie = cookieOf(signedIn)!;
    expect(cookie).toMatch(/^relay_session=rls_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=2592000; HttpOnly; SameSite=Lax$/);
    const session = cookie.split(';')[0]!;

    const user = await fetch(`${relay.url}/dashboard/api/dashboard/user`, { headers: { cookie: session } });
    expect(user.status).toBe(200);
    expect(await user.json()).toMatchObject({ email: 'new.user@example.com', name: 'new.user' });
    const home = await fetch(`${relay.url}/dashboard`, { headers: { cookie: session } });
    expect(home.status).toBe(200);
    expect(home.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await home.text()).toContain('You are signed in as <strong>new.user@example.com</strong>');

    // Once only.
    expect(await (await signIn(path)).json()).toEqual({ success: false, error: 'This sign-in link was used already: ask for a new one' });
    const again = await follow(path);
    expect({ status: again.status, location: again.headers.get('location'), cookie: cookieOf(again) }).toEqual({ status: 303, location: '/dashboard?signin=used', cookie: null });
    expect(await (await fetch(`${relay.url}/dashboard?signin=used`)).text()).toContain('This sign-in link was used already');
  });

  it('marks the cookie Secure when the request came over HTTPS through a trusted proxy', async () => {
    const before = inbox.length;
    expect((await ask('secure@example.com')).status).toBe(202);
    const res = await signIn(await linkFor('secure@example.com', before), { 'x-forwarded-proto': 'https' });
    expect(cookieOf(res)).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
  });

  it('refuses a link after its expiry and a link that is not one', async () => {
    const before = inbox.length;
    const asked = await ask('late@example.com');
    const { expiresAt } = ((await asked.json()) as { data: { expiresAt: string } }).data;
    const path = await linkFor('late@example.com', before);
    await waitFor(() => (Date.now() > Date.parse(expiresAt) + 50 ? true : undefined), 10_000, 'the expiry');
    const late = await follow(path);
    expect({ status: late.status, location: late.headers.get('location'), cookie: cookieOf(late) }).toEqual({ status: 303, location: '/dashboard?signin=expired', cookie: null });
    const forged = await follow(path.replace(/\.[A-Za-z0-9_-]{43}$/, `.${'A'.repeat(43)}`));
    expect(forged.headers.get('location')).toBe('/dashboard?signin=invalid');
    expect((await follow('/dashboard/auth/email/not-a-link')).headers.get('location')).toBe('/dashboard?signin=invalid');
  });

  it('limits attempts per address, refuses bad addresses and cross-origin requests, in the interface shapes', async () => {
    for (let i = 0; i < 3; i++) expect((await ask('busy@example.com')).status).toBe(202);
    const limited = await ask('busy@example.com');
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await limited.json()).toEqual({ success: false, error: 'Too many sign-in attempts: try again later' });
    const bad = await ask('not an address');
    expect({ status: bad.status, body: await bad.json() }).toEqual({ status: 400, body: { success: false, error: 'Invalid email: must be an e-mail address' } });
    const cross = await ask('x@example.com', { origin: 'https://evil.example' });
    expect({ status: cross.status, body: await cross.json() }).toEqual({ status: 400, body: { success: false, error: 'Cross-origin requests are not allowed' } });
  });

  it('takes a bare address only, and counts every spelling of one address against one limit (issue 23, item 4)', async () => {
    // The review's bypass: the mail went to victim@example.com while the limit counted the literal string.
    const client = { 'x-forwarded-for': '198.51.100.23' };
    for (const disguised of ['x1<victim@example.com>', 'Victim <victim@example.com>', 'victim@example.com (me)', '"victim"@example.com', 'victim@[127.0.0.1]', 'g: victim@example.com;']) {
      const res = await ask(disguised, client);
      expect({ status: res.status, body: await res.json() }, disguised).toEqual({ status: 400, body: { success: false, error: 'Invalid email: must be an e-mail address' } });
    }
    const statuses = [];
    for (const spelling of ['victim@example.com', 'VICTIM@Example.COM', ' victim@EXAMPLE.com ', 'victim@example.com']) statuses.push((await ask(spelling, client)).status);
    expect(statuses).toEqual([202, 202, 202, 429]);
    await waitFor(() => smtp.mails.filter((m) => m.to === 'victim@example.com').length === 3, 10_000, 'three mails to victim@example.com');
    expect(smtp.mails.filter((m) => m.to.includes('victim'))).toHaveLength(3);
    // An internationalised domain is one address whether written in Unicode or in its ASCII form.
    const idn = [];
    for (const spelling of ['idn@bücher.example', 'IDN@XN--BCHER-KVA.example', 'idn@Bücher.example', 'idn@xn--bcher-kva.example']) idn.push((await ask(spelling, client)).status);
    expect(idn).toEqual([202, 202, 202, 429]);
  });

  it('gives a recovery code once, which signs in once with the address, and withholds its hash from the history', async () => {
    const before = inbox.length;
    await ask('keeper@example.com');
    const session = cookieOf(await signIn(await linkFor('keeper@example.com', before)))!.split(';')[0]!;
    const generate = () => fetch(`${relay.url}/dashboard/api/dashboard/recovery-code`, { method: 'POST', headers: { cookie: session } });
    const first = await generate();
    expect(first.status).toBe(200);
    const firstCode = ((await first.json()) as { data: { recoveryCode: string } }).data.recoveryCode;
    expect(firstCode).toMatch(/^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$/);
    const second = (await (await generate()).json()) as { success: boolean; data: { recoveryCode: string; generatedAt: string } };
    expect(second).toEqual({ success: true, data: { recoveryCode: expect.any(String), generatedAt: expect.any(String) } });
    const recover = (email: string, code: string) =>
      fetch(`${relay.url}/dashboard/auth/recover`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email, code }) });
    const refused = { status: 400, body: { success: false, error: 'Invalid email or recovery code' } };
    const answer = async (res: Response) => ({ status: res.status, body: await res.json() });
    // The first code was replaced; an unknown address is answered the same.
    expect(await answer(await recover('keeper@example.com', firstCode))).toEqual(refused);
    expect(await answer(await recover('nobody@example.com', second.data.recoveryCode))).toEqual(refused);
    // Typed loosely (lower case, spaces for dashes), it signs in once.
    const recovered = await recover('Keeper@Example.com', second.data.recoveryCode.toLowerCase().replace(/-/g, ' '));
    expect(recovered.status).toBe(200);
    expect(cookieOf(recovered)).toMatch(/^relay_session=rls_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=2592000; HttpOnly; SameSite=Lax$/);
    const user = await fetch(`${relay.url}/dashboard/api/dashboard/user`, { headers: { cookie: cookieOf(recovered)!.split(';')[0]! } });
    expect(((await user.json()) as { email: string }).email).toBe('keeper@example.com');
    expect(await answer(await recover('keeper@example.com', second.data.recoveryCode))).toEqual(refused);
    const history = await relay.cli(['events', '--type', 'RecoveryCodeGenerated']);
    expect(history.stdout).toContain('RecoveryCodeGenerated');
    expect(history.stdout).not.toContain('codeHash');
    expect((await relay.cli(['events', '--type', 'EmailSignInRequested'])).stdout).not.toContain('secretHash');
  });

  it('never writes a usable link to its log', () => {
    const secrets = inbox.map((m) => /\/email\/[0-9a-f]{24}\.([A-Za-z0-9_-]{43})/.exec(m.text)?.[1]).filter((s): s is string => s !== undefined);
    expect(secrets.length).toBeGreaterThan(3);
    for (const secret of secrets) expect(relay.output()).not.toContain(secret);
  });

  it('says clearly when no mail server is configured', async () => {
    const bare = await startRelayProcess();
    try {
      const res = await fetch(`${bare.url}/dashboard/auth/email`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ email: 'a@example.com' }) });
      expect({ status: res.status, body: await res.json() }).toEqual({ status: 503, body: { success: false, error: 'E-mail sign-in is not available: this Relay has no mail server (SMTP_URL)' } });
    } finally {
      await bare.stop();
      await bare.cleanup();
    }
  });
});
