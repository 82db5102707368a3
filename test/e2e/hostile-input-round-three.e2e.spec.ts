/**
 * Issue 47, "Hostile input, round three": the dashboard, its links and the operator's settings.
 * Each block is one finding of the review, with the behaviour that closes it: live statistics end
 * with their session; a GET never signs in (a sign-in link and a messenger poll token open a page
 * whose POST signs in, same-origin only); reading the invite link changes nothing; the session
 * cookie is Secure when PUBLIC_URL is https; TRUST_PROXY counts proxy hops; secrets are never
 * taken from the command line; a stolen session's reach is written down.
 * (Item 1, the Signal link race, is signal-link-route.e2e.spec.ts; a refused /link code ending is
 * apps/pipeline/code-commands.integration.spec.ts.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, createApp, dashboard, waitFor, type Account } from '../support/account-fixture.ts';
import { ROOT, runCli, startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const post = (relay: RelayProcess, route: string, options: { cookie?: string; body?: unknown; headers?: Record<string, string> } = {}) =>
  fetch(`${relay.url}${route}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/json', ...(options.cookie ? { cookie: options.cookie } : {}), ...options.headers },
    body: JSON.stringify(options.body ?? {}),
  });
const answer = async (res: Response) => ({ status: res.status, body: (await res.json()) as any });
const cookieOf = (res: Response) => res.headers.get('set-cookie');
const EVIL = { origin: 'https://evil.example' };
const CROSS_ORIGIN = { status: 400, body: { success: false, error: 'Cross-origin requests are not allowed' } };

describe('issue 47 on a default Relay', () => {
  let relay: RelayProcess;
  let owner: Account;
  let botApp: string;

  beforeAll(async () => {
    relay = await startRelayProcess();
    owner = await createAccount(relay, 'round-three@example.com');
    botApp = (await createApp(relay, owner, ['signal'], 'Round three bot')).appId;
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
  });

  it('ends an open live-statistics stream within a few seconds of "sign out everywhere"', async () => {
    const account = await createAccount(relay, 'live-viewer@example.com');
    const stream = await waitFor(async () => {
      const res = await fetch(`${relay.url}/dashboard/stats/live/events`, { headers: { cookie: account.cookie } });
      if (res.status === 200) return res;
      await res.body?.cancel();
      return undefined;
    }, 20_000, 'the statistics to start');
    const reader = stream.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('event: statistics');
    expect((await post(relay, '/dashboard/auth/logout', { cookie: account.cookie, body: { all: true } })).status).toBe(200);
    const began = Date.now();
    const ended = await Promise.race([
      (async () => {
        for (;;) if ((await reader.read()).done) return true;
      })(),
      new Promise<false>((resolve) => setTimeout(() => resolve(false), 8_000)),
    ]);
    expect(ended, 'the stream ended').toBe(true);
    expect(Date.now() - began).toBeLessThan(8_000);
  });

  it('follows a sign-in link with a GET that signs nobody in; its page POSTs it, same-origin only', async () => {
    const made = await relay.cli(['session', 'link', '--email', 'csrf-victim@example.com']);
    expect(made.code, made.stderr).toBe(0);
    const { pathname } = new URL(made.stdout.trim());
    const link = pathname.split('/').at(-1)!;
    // A mail scanner, or a cross-site page, fetches the link: no cookie, and the link still works.
    for (let i = 0; i < 2; i++) {
      const followed = await fetch(`${relay.url}${pathname}`, { redirect: 'manual' });
      expect({ status: followed.status, location: followed.headers.get('location'), cookie: cookieOf(followed) }).toEqual({ status: 303, location: `/dashboard/sign-in#${link}`, cookie: null });
    }
    const page = await fetch(`${relay.url}/dashboard/sign-in`);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('finish signing in');
    // Another site's form cannot post it.
    expect(await answer(await post(relay, pathname, { headers: EVIL }))).toEqual(CROSS_ORIGIN);
    const signedIn = await post(relay, pathname, { headers: { origin: relay.url } });
    expect(await answer(signedIn)).toEqual({ status: 200, body: { success: true, data: { signedIn: true, sessionId: expect.any(String) } } });
    expect(cookieOf(signedIn)).toMatch(/^relay_session=rls_[A-Za-z0-9_-]{43}; Path=\/; Max-Age=2592000; HttpOnly; SameSite=Lax$/);
    expect(await answer(await post(relay, pathname))).toEqual({ status: 400, body: { success: false, error: 'This sign-in link was used already: ask for a new one' } });
    const again = await fetch(`${relay.url}${pathname}`, { redirect: 'manual' });
    expect(again.headers.get('location')).toBe('/dashboard?signin=used');
  });

  it('answers a messenger sign-in poll by GET without signing in; the POST of the browser that asked signs in', async () => {
    const contact = '+15550470501';
    const linking = await answer(await post(relay, '/dashboard/auth/contacts/link', { cookie: owner.cookie }));
    const send = async (text: string) => {
      const sent = await relay.cli(['simulate', 'inbound', '--app', botApp, '--messenger', 'signal', '--contact', contact, '--text', text]);
      expect(sent.code, sent.stderr).toBe(0);
    };
    await send(linking.body.data.command);
    const asked = await answer(await post(relay, '/dashboard/auth/messenger'));
    const { pollToken, command } = asked.body.data;
    await send(command);
    const route = `/dashboard/auth/messenger/${pollToken}`;
    for (let i = 0; i < 2; i++) {
      const polled = await fetch(`${relay.url}${route}`);
      expect(cookieOf(polled)).toBeNull();
      expect(await answer(polled)).toEqual({ status: 200, body: { success: true, data: { status: 'confirmed', expiresAt: expect.any(String) } } });
    }
    expect(await answer(await post(relay, route, { headers: EVIL }))).toEqual(CROSS_ORIGIN);
    const signedIn = await post(relay, route);
    expect(cookieOf(signedIn)).toMatch(/^relay_session=rls_/);
    expect(await answer(signedIn)).toEqual({ status: 200, body: { success: true, data: { status: 'signed-in', sessionId: expect.any(String) } } });
  });

  it('reads the invite link with the interface GET, which makes nothing; a same-origin POST turns it on', async () => {
    const app = await createApp(relay, owner, ['signal'], 'Invite bot');
    const appMessengerId = app.messengers[0]!.id;
    const read = () => dashboard(relay, owner, 'GET', `/group/invite-link?appMessengerId=${appMessengerId}`);
    expect(await read()).toEqual({ status: 200, body: { appMessengerId, messenger: 'signal', groupId: null, inviteLink: null } });
    const members = await dashboard(relay, owner, 'GET', `/group/members?appMessengerId=${appMessengerId}`);
    expect(members.body).toMatchObject({ groupId: null, changes: [] });

    expect(await answer(await post(relay, '/dashboard/group/invite-link', { cookie: owner.cookie, body: { appMessengerId }, headers: EVIL }))).toEqual(CROSS_ORIGIN);
    const turnedOn = await answer(await post(relay, '/dashboard/group/invite-link', { cookie: owner.cookie, body: { appMessengerId } }));
    expect(turnedOn).toEqual({ status: 200, body: { appMessengerId, messenger: 'signal', groupId: expect.any(String), inviteLink: expect.stringMatching(/^https:\/\/signal\.group\//) } });
    expect(await read()).toEqual({ status: 200, body: turnedOn.body });
    expect(await answer(await post(relay, '/dashboard/group/invite-link', { body: { appMessengerId } }))).toEqual({ status: 400, body: { success: false, error: 'Session token is required' } });
  });

  it('lists GET /credentials-full in the privacy model as what a stolen session yields, and what limits it', () => {
    const privacy = fs.readFileSync(path.join(ROOT, 'docs/privacy.md'), 'utf8');
    const section = privacy.slice(privacy.indexOf('## A stolen session'));
    expect(section).toContain('`GET /credentials-full`');
    expect(section).toContain('`SESSION_TTL_HOURS`');
    expect(section).toContain('sign out everywhere');
  });
});

describe('issue 47 behind a reverse proxy, with an https PUBLIC_URL', () => {
  let relay: RelayProcess;
  beforeAll(async () => {
    relay = await startRelayProcess({ env: { PUBLIC_URL: 'https://relay.example', TRUST_PROXY: 'true', SIGN_IN_PER_CLIENT: '3' } });
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
  });

  it('marks the session cookie Secure even when the proxy does not say https', async () => {
    const account = await createAccount(relay, 'secure-cookie@example.com');
    const code = (await dashboard(relay, account, 'POST', '/recovery-code')).body.data.recoveryCode as string;
    const recovered = await post(relay, '/dashboard/auth/recover', { body: { email: 'secure-cookie@example.com', code } });
    expect(recovered.status).toBe(200);
    expect(cookieOf(recovered)).toMatch(/; HttpOnly; SameSite=Lax; Secure$/);
  });

  it('trusts one proxy hop: a client that writes its own X-Forwarded-For is still limited by its real address', async () => {
    const statuses: number[] = [];
    for (let i = 1; i <= 4; i++) {
      // What the client sent, then the address the proxy appended (the client's own).
      const headers = { 'x-forwarded-for': `198.51.100.${i}, 203.0.113.47` };
      statuses.push((await post(relay, '/dashboard/auth/recover', { body: { email: 'nobody@example.com', code: 'AAAAA-AAAAA-AAAAA-AAAAA' }, headers })).status);
    }
    expect(statuses).toEqual([400, 400, 400, 429]);
  });
});

describe('issue 47: secrets are never taken from the command line', () => {
  it('refuses a secret given as a flag, saying where it goes instead', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-argv-'));
    try {
      for (const [flag, variable] of [
        ['--relay-secret-key', 'RELAY_SECRET_KEY'],
        ['--database-url', 'DATABASE_URL'],
        ['--smtp-url', 'SMTP_URL'],
      ] as const) {
        const result = await runCli(['events', '--limit', '1', flag, 'postgres://relay:hunter2@db.example/relay'], { DATA_DIR: dataDir });
        expect(result.code, result.stderr).toBe(2);
        expect(result.stderr).toContain(`relay: ${flag} is refused: a secret on the command line can be read by other users of this machine (ps). Set ${variable} in the environment, or ${variable}_FILE to a file that holds it`);
        expect(result.stderr).not.toContain('hunter2');
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
