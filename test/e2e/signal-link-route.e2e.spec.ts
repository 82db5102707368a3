/**
 * `POST /dashboard/signal/link` against the fake signal-cli, which counts its calls (issue 47,
 * item 1): the slot of a link is taken before the daemon is asked, so concurrent requests for one
 * app-messenger make one `startLink`, in this process and in another instance on the same store and
 * daemon; a failed start gives the slot back; link starts are limited per user.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, dashboard, type Account } from '../support/account-fixture.ts';
import { FakeSignalCli } from '../support/fake-signal-cli.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

describe('the Signal link route under concurrent and repeated requests', () => {
  let daemon: FakeSignalCli;
  let relay: RelayProcess;
  let owner: Account;
  const env = () => ({ SIGNAL_CLI_URL: daemon.httpUrl, MESSENGER_HEALTH_INTERVAL_MS: '3600000', SIGNAL_CLI_ACCOUNT_WATCH_MS: '3600000' });

  /** A Signal app-messenger of the account, without an identity yet (signal-cli has none bound). */
  const signalMessenger = async (account: Account) => {
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Linked bot', protocol: ['signal'] });
    expect(created.status).toBe(200);
    return created.body.messengers[0].id as string;
  };
  const startLink = async (on: RelayProcess, account: Account, appMessengerId: string) => {
    const res = await fetch(`${on.url}/dashboard/signal/link`, { method: 'POST', headers: { cookie: account.cookie, 'content-type': 'application/json' }, body: JSON.stringify({ appMessengerId }) });
    return { status: res.status, retryAfter: res.headers.get('retry-after'), body: (await res.json()) as any };
  };

  beforeAll(async () => {
    // startLink takes a while, as the real daemon's does (it asks Signal's servers): the window of the race.
    daemon = await new FakeSignalCli({ startLinkDelayMs: 300 }).start();
    relay = await startRelayProcess({ env: env() });
    owner = await createAccount(relay, 'link-owner@example.com');
  });
  afterAll(async () => {
    await relay?.stop();
    await relay?.cleanup();
    await daemon?.close();
  });

  it('20 concurrent requests for one app-messenger make exactly one startLink, and all show its link', async () => {
    const appMessengerId = await signalMessenger(owner);
    const answers = await Promise.all(Array.from({ length: 20 }, () => startLink(relay, owner, appMessengerId)));
    expect(daemon.callsOf('startLink')).toBe(1);
    const uris = new Set(answers.map((a) => a.body.data?.uri));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
    expect(uris.size).toBe(1);
    expect([...uris][0]).toMatch(/^sgnl:\/\/linkdevice\?uuid=/);
    await expect.poll(() => daemon.callsOf('finishLink')).toBe(1);

    // Another instance on the same store and daemon finds the slot taken, and asks the daemon nothing.
    const second = await startRelayProcess({ role: 'api', dataDir: relay.dataDir, env: env() });
    try {
      const elsewhere = await startLink(second, owner, appMessengerId);
      expect(elsewhere.status).toBe(409);
      expect(elsewhere.body).toEqual({ success: false, error: 'A link of this Signal bot is already waiting for a phone: scan it, or ask again once it expires' });
      expect(Number(elsewhere.retryAfter)).toBeGreaterThan(0);
      expect(daemon.callsOf('startLink')).toBe(1);
    } finally {
      await second.stop();
    }
  });

  it('gives the slot back when the daemon fails, and limits link starts per user (429)', async () => {
    const user = await createAccount(relay, 'link-retrier@example.com');
    const appMessengerId = await signalMessenger(user);
    const before = daemon.callsOf('startLink');
    for (let i = 0; i < 5; i++) {
      daemon.failNextCallOf('startLink', -3, 'Link request error: Connection closed!');
      const failed = await startLink(relay, user, appMessengerId);
      expect(failed.status).toBe(502);
      expect(failed.body.error).toContain("signal-cli's daemon could not reach Signal's servers");
    }
    expect(daemon.callsOf('startLink')).toBe(before + 5);
    const limited = await startLink(relay, user, appMessengerId);
    expect({ status: limited.status, body: limited.body }).toEqual({ status: 429, body: { success: false, error: 'Too many Signal links started: try again later' } });
    expect(Number(limited.retryAfter)).toBeGreaterThan(0);
    expect(daemon.callsOf('startLink')).toBe(before + 5);
  });
});
