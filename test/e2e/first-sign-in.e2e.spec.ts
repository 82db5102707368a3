/**
 * The first sign-in on a default install, which has no mail server (issue 25, scope item 3):
 * `relay start` prints a one-time sign-in link for the operator, `relay session link` makes one
 * for any address, and `/dashboard` says how to sign in without mail. With a mail server, nothing
 * is printed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { startSmtpInbox } from '../support/smtp-inbox.ts';

const LINK = /(http:\/\/\S+\/dashboard\/auth\/email\/[0-9a-f]{24}\.[A-Za-z0-9_-]{43})/;

/**
 * Follows a sign-in link as a browser would, and presses the button of the page it opens (the GET
 * signs nobody in: issue 47): where the link led, and the session cookie the POST set.
 */
const follow = async (link: string) => {
  const res = await fetch(link, { redirect: 'manual' });
  expect(res.headers.get('set-cookie')).toBeNull();
  const location = res.headers.get('location');
  if (!location?.startsWith('/dashboard/sign-in#')) return { status: res.status, location, cookie: undefined };
  const signedIn = await fetch(link, { method: 'POST' });
  const cookie = /relay_session=([^;]+)/.exec(signedIn.headers.get('set-cookie') ?? '')?.[1];
  return { status: signedIn.status, location, cookie };
};

const userOf = async (relay: RelayProcess, cookie: string) => {
  const res = await fetch(`${relay.url}/dashboard/api/dashboard/user`, { headers: { cookie: `relay_session=${cookie}` } });
  return { status: res.status, body: (await res.json()) as { email?: string } };
};

describe('the first sign-in without a mail server', () => {
  let relay: RelayProcess;
  beforeAll(async () => {
    relay = await startRelayProcess({ env: { PUBLIC_URL: 'http://127.0.0.1:1' } });
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
  });

  it('prints a one-time sign-in link for the operator when Relay starts, which signs in once', async () => {
    const printed = relay.output();
    expect(printed).toContain('No mail server (SMTP_URL), so here is a one-time sign-in link for operator@relay.localhost, valid 15 minutes:');
    const link = LINK.exec(printed)![1]!.replace('http://127.0.0.1:1', relay.url);
    const first = await follow(link);
    expect(first).toMatchObject({ status: 200, location: `/dashboard/sign-in#${link.split('/').at(-1)}` });
    expect(await userOf(relay, first.cookie!)).toMatchObject({ status: 200, body: { email: 'operator@relay.localhost' } });
    expect(await follow(link)).toEqual({ status: 303, location: '/dashboard?signin=used', cookie: undefined });
    // The link is on standard output for the operator, never in the JSON log.
    const secret = link.split('.').at(-1)!;
    expect(printed.split('\n').filter((line) => line.includes(secret) && line.startsWith('{'))).toEqual([]);
  });

  it('makes a link for any address with `relay session link`, and refuses one that is not an address', async () => {
    const made = await relay.cli(['session', 'link', '--email', 'Me@Example.com']);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).toMatch(/^http:\/\/127\.0\.0\.1:1\/dashboard\/auth\/email\/[0-9a-f]{24}\.[A-Za-z0-9_-]{43}\n$/);
    const signedIn = await follow(made.stdout.trim().replace('http://127.0.0.1:1', relay.url));
    expect(signedIn.status).toBe(200);
    expect(await userOf(relay, signedIn.cookie!)).toMatchObject({ status: 200, body: { email: 'me@example.com' } });
    const refused = await relay.cli(['session', 'link', '--email', 'alice']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('Invalid email: must be an e-mail address');
    expect(refused.stdout).toBe('');
  });

  it('tells a browser that is not signed in how to sign in without mail', async () => {
    const res = await fetch(`${relay.url}/dashboard`);
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain('This Relay has no mail server (<code>SMTP_URL</code>), so it cannot mail sign-in links.');
    expect(page).toContain('<code>npx relay session link --email you@example.com</code>');
  });
});

describe('the first sign-in with a mail server', () => {
  it('prints no link, and the page tells to ask for one by mail', async () => {
    const smtp = await startSmtpInbox();
    const relay = await startRelayProcess({ env: { SMTP_URL: smtp.url } });
    try {
      expect(relay.output()).not.toContain('/dashboard/auth/email/');
      expect(await (await fetch(`${relay.url}/dashboard`)).text()).toContain('then follow the link in the mail');
    } finally {
      await relay.stop();
      await relay.cleanup();
      await smtp.close();
    }
  });
});
