/**
 * Signal end to end through the public API, with Relay on signal-cli's protocol: the daemon is the
 * protocol-faithful fake (test/support/fake-signal-cli.ts), since an account cannot be registered
 * or linked here. A contact's message is polled, the reply reaches the daemon, in a group too,
 * across a Relay restart, a dropped daemon connection, and a SIGKILL after the message was recorded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSignalCli, groupUpdateEnvelope } from '../support/fake-signal-cli.ts';
import { api, createAccount, pollMessages, createKey, dashboard, turnOnInviteLink, waitFor, type Account } from '../support/account-fixture.ts';
import { BOT, envelopeFrom, GROUP } from '../support/signal-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const CONTACT = '+15550100001';
const HIDDEN = '0f3b2c1d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';

describe.each(['http', 'tcp'] as const)('Signal on signal-cli over %s (fake daemon)', (transport) => {
  let fake: FakeSignalCli;
  let relay: RelayProcess;
  let account: Account;
  let appId: string;
  let appMessengerId: string;
  let key: string;
  let clock = 1_700_000_000_000;
  const started: RelayProcess[] = [];

  const start = async (dataDir?: string) => {
    const url = transport === 'http' ? fake.httpUrl : `tcp://127.0.0.1:${fake.tcpPort}`;
    relay = await startRelayProcess({ env: { SIGNAL_CLI_URL: url, RATE_LIMIT_POLL_PER_MIN: '100000', SIGNAL_CLI_ACCOUNT_WATCH_MS: '200' }, ...(dataDir ? { dataDir } : {}) });
    started.push(relay);
    await waitFor(() => (fake.listeners > 0 ? true : undefined), 10_000, 'Relay listening to the daemon');
  };

  const pollAll = (count: number) => pollMessages(relay, key, count);

  const contactWrites = (contactId: string, text: string, groupId?: string) => {
    const timestamp = ++clock;
    fake.receive(BOT, envelopeFrom(contactId, text, timestamp, groupId));
    return timestamp;
  };

  beforeAll(async () => {
    fake = await new FakeSignalCli({ keepAliveMs: 200, shuffleMs: 3 }).start();
    fake.addAccount(BOT);
    await start();
    account = await createAccount(relay);
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Signal bot', protocol: ['signal'] });
    expect(created.status).toBe(200);
    appId = created.body.id;
    key = (await createKey(relay, account, [appId])).secret;
  });

  afterAll(async () => {
    for (const r of started) await r.stop().catch(() => undefined);
    await relay?.cleanup();
    await fake?.close();
  });

  it('leaves a new Signal app-messenger waiting until an operator binds an account of the daemon to it', async () => {
    const list = await dashboard(relay, account, 'GET', '/apps');
    const messenger = list.body.items.find((a: any) => a.id === appId).messengers[0];
    expect(messenger).toMatchObject({ messenger: 'signal', status: 'processing', address: null });
    appMessengerId = messenger.id;

    const unknown = await relay.cli(['signal', 'bind', '--app-messenger', appMessengerId, '--account', '+15550000000']);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('signal-cli has no account +15550000000: register it with signal-cli, or link one with relay signal link');

    const bound = await relay.cli(['signal', 'bind', '--app-messenger', appMessengerId, '--account', BOT]);
    expect(bound.code, bound.stderr).toBe(0);
    expect(bound.stdout).toBe('bound\n');
    await waitFor(async () => {
      const apps = await dashboard(relay, account, 'GET', '/apps');
      const m = apps.body.items.find((a: any) => a.id === appId).messengers[0];
      return m.status === 'active' && m.address === BOT ? true : undefined;
    }, 10_000, 'the app-messenger active with the bound account');
    expect((await relay.cli(['signal', 'bind', '--app-messenger', appMessengerId, '--account', BOT])).stdout).toBe('already bound\n');
  });

  it('links a new Signal identity from a QR code in the terminal and binds it to an app-messenger', async () => {
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Linked bot', protocol: ['signal'] });
    const linkedMessengerId = created.body.messengers[0].id as string;
    const linking = relay.cli(['signal', 'link', '--app-messenger', linkedMessengerId, '--device-name', 'Relay test', '--timeout', '30']);
    const uri = await waitFor(() => fake.pendingLinks[0], 15_000, 'finishLink waiting for the phone');
    expect(uri).toMatch(/^sgnl:\/\/linkdevice\?uuid=/);
    const linkedAccount = transport === 'http' ? '+15550007771' : '+15550007772';
    fake.scan(uri, linkedAccount);
    const res = await linking;
    expect(res.code, res.stderr).toBe(0);
    expect(res.stdout).toMatch(/[▀▄█]/); // the QR code
    expect(res.stdout).toContain(`or open:\n${uri}\n`);
    expect(res.stdout.endsWith(`linked ${linkedAccount}: bound\n`)).toBe(true);
    await waitFor(async () => {
      const apps = await dashboard(relay, account, 'GET', '/apps');
      const m = apps.body.items.find((a: any) => a.id === created.body.id).messengers[0];
      return m.status === 'active' && m.address === linkedAccount ? true : undefined;
    }, 10_000, 'the linked app-messenger active');
  });

  it('receives for an account linked while Relay listens, without a restart', async () => {
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Late linked bot', protocol: ['signal'] });
    const lateKey = (await createKey(relay, account, [created.body.id])).secret;
    const late = transport === 'http' ? '+15550006661' : '+15550006662';
    fake.addAccount(late);
    expect((await relay.cli(['signal', 'bind', '--app-messenger', created.body.messengers[0].id, '--account', late])).code).toBe(0);
    // Written until it arrives: a message before Relay covers the account is lost at the daemon (on-start mode).
    const polled = await waitFor(async () => {
      fake.receive(late, envelopeFrom(CONTACT, 'to the account linked late', ++clock));
      const res = await api(relay, 'GET', '/messages/poll', { key: lateKey });
      return res.body.count > 0 ? res.body.messages : undefined;
    }, 15_000, 'a message to the account linked while Relay listened');
    expect(polled[0].content).toBe('to the account linked late');
  });

  it("polls a contact's message and delivers the reply to the daemon, from the bound account", async () => {
    const timestamp = contactWrites(CONTACT, 'hello relay');
    const [message] = await pollAll(1);
    expect(message).toEqual({
      appId,
      messenger: 'signal',
      contactId: CONTACT,
      messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
      content: 'hello relay',
      timestamp,
      isGroupMessage: false,
      isCommand: false,
    });
    const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: CONTACT, message: 'hi back' }] } });
    expect(sent.status).toBe(202);
    await waitFor(() => (fake.sent.some((s) => s.message === 'hi back') ? true : undefined), 15_000, 'the reply at the daemon');
    expect(fake.sent.find((s) => s.message === 'hi back')).toMatchObject({ account: BOT, recipient: [CONTACT] });
  });

  it('does the same in a group, and with a contact who hides their number', async () => {
    contactWrites(CONTACT, 'in the group', GROUP);
    contactWrites(HIDDEN, 'number hidden');
    const polled = await pollAll(2);
    const group = polled.find((m) => m.content === 'in the group');
    expect(group).toMatchObject({ contactId: CONTACT, groupId: GROUP, isGroupMessage: true });
    expect(polled.find((m) => m.content === 'number hidden')).toMatchObject({ contactId: HIDDEN, isGroupMessage: false });
    const sent = await api(relay, 'POST', '/messages/send', {
      key,
      body: {
        messages: [
          { appId, messenger: 'signal', contactId: CONTACT, groupId: GROUP, message: 'to the group' },
          { appId, messenger: 'signal', contactId: HIDDEN, message: 'to the hidden one' },
        ],
      },
    });
    expect(sent.status).toBe(202);
    await waitFor(() => (fake.sent.filter((s) => s.message.startsWith('to the ')).length === 2 ? true : undefined), 15_000, 'both replies');
    expect(fake.sent.find((s) => s.message === 'to the group')).toMatchObject({ account: BOT, groupId: GROUP });
    expect(fake.sent.find((s) => s.message === 'to the hidden one')).toMatchObject({ account: BOT, recipient: [HIDDEN] });
  });

  it("administers the app-messenger's group on the daemon through the group routes", async () => {
    const added = await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId, contactId: CONTACT });
    expect(added).toEqual({ status: 200, body: { success: true, data: { requestId: expect.any(String), appMessengerId, operation: 'add-member', contactId: CONTACT, status: 'done' } } });
    expect((await dashboard(relay, account, 'POST', '/group/promote-admin', { appMessengerId, contactId: CONTACT })).status).toBe(200);
    const listed = await dashboard(relay, account, 'GET', `/group/members?appMessengerId=${appMessengerId}`);
    expect(listed.status).toBe(200);
    expect(listed.body).toMatchObject({ messenger: 'signal', members: [{ contactId: CONTACT, role: 'admin', status: 'joined' }], memberCount: 1 });
    const onDaemon = fake.groups.group(listed.body.groupId);
    expect(onDaemon).toMatchObject({ account: BOT, name: 'Signal bot' });
    expect([...onDaemon!.admins].sort()).toEqual([CONTACT, BOT].sort());
    const link = await turnOnInviteLink(relay, account, appMessengerId);
    expect(link).toEqual({ status: 200, body: { appMessengerId, messenger: 'signal', groupId: listed.body.groupId, inviteLink: onDaemon!.link } });
    expect(await dashboard(relay, account, 'GET', `/group/invite-link?appMessengerId=${appMessengerId}`)).toEqual(link);
    // Someone joins by the link: signal-cli tells the group's members, and the list is read again at once.
    fake.groups.join(listed.body.groupId, '+15550100055');
    fake.receive(BOT, groupUpdateEnvelope({ number: '+15550100055', uuid: '5b0a1c2d-3e4f-4a5b-8c6d-7e8f9a0b1c2d' }, listed.body.groupId, ++clock));
    await waitFor(async () => {
      const now = await dashboard(relay, account, 'GET', `/group/members?appMessengerId=${appMessengerId}`);
      return now.body.memberCount === 2 ? now.body.members : undefined;
    }, 10_000, 'the member who joined by the link');
    fake.groups.markUnregistered('+15550100077');
    expect(await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId, contactId: '+15550100077' })).toEqual({
      status: 400,
      body: { success: false, error: 'The contact is not registered on Signal' },
    });
  });

  it('records a message the daemon hands over twice once', async () => {
    const envelope = envelopeFrom(CONTACT, 'only once', ++clock);
    fake.receive(BOT, envelope);
    fake.receive(BOT, envelope);
    contactWrites(CONTACT, 'after it');
    const polled = await pollAll(2);
    expect(polled.map((m) => m.content)).toEqual(['only once', 'after it']);
  });

  it('goes on after the daemon drops the connection', async () => {
    const before = fake.connections;
    fake.dropConnections();
    // Back on the daemon with a connection that hears the bot (Relay has an event stream per account).
    await waitFor(() => (fake.connections > before && fake.hears(BOT) ? true : undefined), 15_000, 'Relay back on the daemon');
    contactWrites(CONTACT, 'after the cut');
    expect((await pollAll(1)).map((m) => m.content)).toEqual(['after the cut']);
  });

  it("lets a bot's replies wait while its account is missing from the daemon, without spending an attempt or holding back another bot, and delivers them once it is back", async () => {
    const linked = (await dashboard(relay, account, 'GET', '/apps')).body.items.find((a: { name: string }) => a.name === 'Linked bot');
    const linkedKey = (await createKey(relay, account, [linked.id])).secret;
    fake.removeAccount(BOT);
    const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: CONTACT, message: 'patience' }] } });
    expect(sent.status).toBe(202);
    const messageId = sent.body.successfulMessages[0].messageId as string;
    // Another bot on the same daemon goes on.
    const other = await api(relay, 'POST', '/messages/send', { key: linkedKey, body: { messages: [{ appId: linked.id, messenger: 'signal', contactId: CONTACT, message: 'not held back' }] } });
    expect(other.status).toBe(202);
    await waitFor(() => (fake.sent.some((s) => s.message === 'not held back') ? true : undefined), 15_000, "the other bot's reply");
    await waitFor(() => (relay.output().includes('deliveries of an app-messenger wait for its bot identity') ? true : undefined), 15_000, 'the one line that says so');
    expect(fake.sent.some((s) => s.message === 'patience')).toBe(false);
    // Said once, naming the app-messenger, without a stack trace.
    const lines = relay.output().split('\n').filter((line) => line.includes('wait for its bot identity'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0]!)).toMatchObject({ appMessengerId, messenger: 'signal', reason: "The bot's Signal account is not on the signal-cli daemon (unlinked or removed)" });
    expect(lines[0]).not.toContain('stack');
    fake.addAccount(BOT);
    await waitFor(() => (fake.sent.some((s) => s.message === 'patience') ? true : undefined), 20_000, 'the reply once the account is back');
    // The outcome is appended just after the daemon answered.
    const events = await waitFor(async () => {
      const res = await relay.cli(['events', '--stream', `outbound-${messageId}`]);
      const lines = res.stdout.trim().split('\n').filter(Boolean).map((line) => JSON.parse(line) as { type: string; data: { attempt?: number } });
      return lines.some((e) => e.type === 'MessageDelivered') ? lines : undefined;
    }, 10_000, 'the outcome of the reply');
    const types = events.map((e) => e.type);
    expect(types.at(-1)).toBe('MessageDelivered');
    expect(new Set(types.slice(0, -1))).toEqual(new Set(['DeliveryDeferred']));
    expect(new Set(events.map((e) => e.data.attempt))).toEqual(new Set([1]));
  });

  it('keeps a recorded message across a SIGKILL, and works after the restart', async () => {
    contactWrites(CONTACT, 'before the kill');
    await waitFor(async () => {
      const res = await relay.cli(['events', '--category', 'inbound', '--type', 'InboundMessageReceived']);
      return res.stdout.trim().split('\n').filter(Boolean).length >= 7 ? true : undefined;
    }, 15_000, 'the message recorded');
    await relay.kill();
    await start(relay.dataDir);
    contactWrites(CONTACT, 'after the restart');
    expect((await pollAll(2)).map((m) => m.content)).toEqual(['before the kill', 'after the restart']);
    const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: CONTACT, message: 'still here' }] } });
    expect(sent.status).toBe(202);
    await waitFor(() => (fake.sent.some((s) => s.message === 'still here') ? true : undefined), 15_000, 'the reply after the restart');
  });
});

describe('Signal on signal-cli with --receive-mode manual over TCP (fake daemon)', () => {
  let fake: FakeSignalCli;
  const started: RelayProcess[] = [];
  afterAll(async () => {
    for (const r of started) await r.stop().catch(() => undefined);
    await started.at(-1)?.cleanup();
    await fake?.close();
  });

  it('receives for an account linked or bound while Relay runs, without a restart (issue 24, item 3)', async () => {
    const daemon = await new FakeSignalCli({ keepAliveMs: 200, receiveMode: 'manual' }).start();
    daemon.addAccount(BOT);
    const relay = await startRelayProcess({ env: { SIGNAL_CLI_URL: `tcp://127.0.0.1:${daemon.tcpPort}`, SIGNAL_CLI_RECEIVE_MODE: 'manual', SIGNAL_CLI_ACCOUNT_WATCH_MS: '200' } });
    try {
      await waitFor(() => (daemon.listeners > 0 ? true : undefined), 10_000, 'Relay subscribed');
      const account = await createAccount(relay);
      const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Late bot', protocol: ['signal'] });
      const appId = created.body.id as string;
      // The account joins the daemon after Relay subscribed (as `relay signal link` makes it), and is bound.
      const LATE = '+15550008888';
      daemon.addAccount(LATE);
      expect((await relay.cli(['signal', 'bind', '--app-messenger', created.body.messengers[0].id, '--account', LATE])).code).toBe(0);
      const key = (await createKey(relay, account, [appId])).secret;
      daemon.receive(LATE, envelopeFrom(CONTACT, 'to the late account', 1_700_000_000_777));
      const polled = await waitFor(async () => {
        const res = await api(relay, 'GET', '/messages/poll', { key });
        return res.body.count > 0 ? res.body.messages : undefined;
      }, 15_000, 'the message to the account linked while Relay ran');
      expect(polled.map((m: { content: string }) => m.content)).toEqual(['to the late account']);
    } finally {
      await relay.stop();
      await relay.cleanup();
      await daemon.close();
    }
  });

  it('receives what contacts wrote while Relay was stopped, since the daemon only receives while Relay subscribes', async () => {
    fake = await new FakeSignalCli({ keepAliveMs: 200, receiveMode: 'manual' }).start();
    fake.addAccount(BOT);
    const env = { SIGNAL_CLI_URL: `tcp://127.0.0.1:${fake.tcpPort}`, SIGNAL_CLI_RECEIVE_MODE: 'manual', MESSENGER_HEALTH_INTERVAL_MS: '100' };
    let relay = await startRelayProcess({ env });
    started.push(relay);
    const account = await createAccount(relay);
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Signal bot', protocol: ['signal'] });
    const appId = created.body.id as string;
    const appMessengerId = created.body.messengers[0].id as string;
    expect((await relay.cli(['signal', 'bind', '--app-messenger', appMessengerId, '--account', BOT])).code).toBe(0);
    const key = (await createKey(relay, account, [appId])).secret;
    await waitFor(async () => {
      const apps = await dashboard(relay, account, 'GET', '/apps');
      return apps.body.items[0].messengers[0].status === 'active' ? true : undefined;
    }, 10_000, 'the app-messenger active');

    await relay.stop();
    fake.receive(BOT, envelopeFrom(CONTACT, 'while Relay was away', 1_700_000_000_001));
    relay = await startRelayProcess({ env, dataDir: relay.dataDir });
    started.push(relay);
    const polled: any[] = [];
    await waitFor(async () => {
      const res = await api(relay, 'GET', '/messages/poll', { key });
      polled.push(...res.body.messages);
      return polled.length > 0 ? true : undefined;
    }, 15_000, 'the message written while Relay was away');
    expect(polled.map((m) => m.content)).toEqual(['while Relay was away']);
    expect(fake.lost).toBe(0);

    // Health: the account removed from the daemon, then the daemon gone, each shown and counted.
    const healthOf = async () => (await dashboard(relay, account, 'GET', '/apps')).body.items[0].messengers[0];
    const unhealthy = async (health: string) => {
      const text = await (await fetch(`${relay.url}/metrics`)).text();
      return Number(new RegExp(`^relay_app_messengers_unhealthy\\{messenger="signal",health="${health}"\\} (\\d+)$`, 'm').exec(text)?.[1]);
    };
    // It was account-missing until it was bound: ok from the first health round after the bind.
    await waitFor(async () => ((await healthOf()).health === 'ok' ? true : undefined), 10_000, 'ok once bound');
    expect(await healthOf()).toMatchObject({ health: 'ok', healthReason: null });
    expect(await unhealthy('account-missing')).toBe(0);
    // An app-messenger no account is bound to yet says so (it said ok before issue 24).
    const unbound = await dashboard(relay, account, 'POST', '/apps', { name: 'Unbound bot', protocol: ['signal'] });
    const unboundHealth = async () => (await dashboard(relay, account, 'GET', '/apps')).body.items.find((a: { id: string }) => a.id === unbound.body.id).messengers[0];
    await waitFor(async () => ((await unboundHealth()).health === 'account-missing' ? true : undefined), 10_000, 'the unbound app-messenger account-missing');
    expect((await unboundHealth()).healthReason).toBe('No bot identity of the daemon is bound to it yet');
    expect(await unhealthy('account-missing')).toBe(1);
    fake.removeAccount(BOT);
    await waitFor(async () => ((await healthOf()).health === 'account-missing' ? true : undefined), 10_000, 'account-missing');
    expect((await healthOf()).healthReason).toBe("The daemon no longer has the bot's account (unlinked or removed)");
    expect(await unhealthy('account-missing')).toBe(2);
    fake.addAccount(BOT);
    await waitFor(async () => ((await healthOf()).health === 'ok' ? true : undefined), 10_000, 'healthy again');
    await fake.close();
    await waitFor(async () => ((await healthOf()).health === 'daemon-unreachable' ? true : undefined), 10_000, 'daemon-unreachable');
    await waitFor(async () => ((await unboundHealth()).health === 'daemon-unreachable' ? true : undefined), 10_000, 'the unbound one daemon-unreachable too');
    expect(await unhealthy('daemon-unreachable')).toBe(2);
    const history = await relay.cli(['events', '--type', 'AppMessengerHealthChanged']);
    const bound = (await healthOf()).id;
    const changes = history.stdout.trim().split('\n').map((line) => JSON.parse(line).data as { appMessengerId: string; health: string });
    // Unbound at first (account-missing until the bind), then the three changes above.
    expect(changes.filter((c) => c.appMessengerId === bound).map((c) => c.health)).toEqual(['account-missing', 'ok', 'account-missing', 'ok', 'daemon-unreachable']);
  });
});
