/**
 * Session end to end through the public API, with Relay on its own Session client
 * (SESSION_NETWORK=on) pointed at the fake swarm (test/support/fake-session-swarm.ts: HTTPS
 * storage servers on 127.0.0.1, the seed node's certificate pinned with SESSION_SEED_CA), since no
 * Session network can be reached here. The contact is the independent test client
 * (test/support/session-test-client.ts), which decrypts and checks every layer with code of its
 * own. A new app-messenger gets a Session ID; a send reaches the contact exactly; the contact's
 * reply is pollable and a reply to its contactId reaches them; the group routes refuse; a network
 * outage holds deliveries back; a SIGKILL loses and repeats nothing a contact wrote; an operator's
 * Session account is imported and exported with the CLI.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mnemonicToSeed, seedToMnemonic } from '../../infra/messenger/session/mnemonic.ts';
import { api, createAccount, createApp, createKey, dashboard, pollMessages, waitFor, type Account } from '../support/account-fixture.ts';
import { FakeSessionSwarm } from '../support/fake-session-swarm.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';
import { SessionTestClient, type TestClientMessage } from '../support/session-test-client.ts';

const SESSION_ID = /^05[0-9a-f]{64}$/;
const GROUPS_REFUSED = 'Session groups are not supported by Relay: its Session client sends and receives one-to-one messages only';

describe('Session on Relay’s own client (fake swarm)', () => {
  let swarm: FakeSessionSwarm;
  let caDir: string;
  let relay: RelayProcess;
  let account: Account;
  let appId: string;
  let appMessengerId: string;
  let address: string;
  let key: string;
  let contact: SessionTestClient;
  const started: RelayProcess[] = [];

  const sessionEnv = (): Record<string, string> => ({
    SESSION_NETWORK: 'on',
    SESSION_SEED_NODES: swarm.seedUrl,
    SESSION_SEED_CA: path.join(caDir, 'seed.pem'),
    SESSION_ALLOW_PRIVATE_NODES: 'true',
    SESSION_POOL_AGREEMENT: '3',
    SESSION_TIMEOUT_MS: '3000',
    SESSION_POLL_MIN_MS: '100',
    SESSION_POLL_MAX_MS: '400',
    MESSENGER_HEALTH_INTERVAL_MS: '300',
    RATE_LIMIT_POLL_PER_MIN: '100000',
  });
  const start = async (extra: Record<string, string> = {}, dataDir?: string) => {
    relay = await startRelayProcess({ env: { ...sessionEnv(), ...extra }, ...(dataDir ? { dataDir } : {}) });
    started.push(relay);
  };
  const send = async (message: Record<string, unknown>, sendKey = key, sendAppId = appId) => {
    const res = await api(relay, 'POST', '/messages/send', { key: sendKey, body: { messages: [{ appId: sendAppId, messenger: 'session', ...message }] } });
    expect(res.status, JSON.stringify(res.body)).toBe(202);
  };
  /** The app-messengers of an app (the first app's by default), as the dashboard API shows them. */
  const appMessengers = async (ofApp = appId): Promise<any[]> => ((await dashboard(relay, account, 'GET', '/apps')).body.items as any[]).find((a) => a.id === ofApp)?.messengers ?? [];
  /** What the contact receives from now on, until `count` messages came; then a while longer, for any repeat. */
  const receiveExactly = async (client: SessionTestClient, count: number): Promise<TestClientMessage[]> => {
    const got = await client.waitForMessages(count, 20_000);
    await new Promise((r) => setTimeout(r, 500));
    return [...got, ...(await client.receive())];
  };

  beforeAll(async () => {
    // 12 nodes: as many as the client's smallest pool, so that it does not ask the seed again at every call.
    swarm = await FakeSessionSwarm.start({ swarms: 4, nodesPerSwarm: 3 });
    caDir = fs.mkdtempSync(path.join(os.tmpdir(), 'relay-session-ca-'));
    fs.writeFileSync(path.join(caDir, 'seed.pem'), swarm.certificates.seed);
    contact = SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
    await start();
    account = await createAccount(relay);
    const app = await createApp(relay, account, ['session'], 'Session bot');
    appId = app.appId;
    appMessengerId = app.messengers[0]!.id;
    address = app.messengers[0]!.address!;
    key = (await createKey(relay, account, [appId])).secret;
  });

  afterAll(async () => {
    for (const r of started) await r.stop().catch(() => undefined);
    await relay?.cleanup();
    await swarm?.close();
    if (caDir) fs.rmSync(caDir, { recursive: true, force: true });
  });

  it('gives the app-messenger a Session ID as its address, its seed sealed in the history', async () => {
    expect(address).toMatch(SESSION_ID);
    const history = await relay.cli(['events', '--category', 'sessionidentity']);
    expect(history.code, history.stderr).toBe(0);
    const events = history.stdout.trim().split('\n').map((line) => JSON.parse(line));
    expect(events).toEqual([
      expect.objectContaining({ type: 'SessionIdentityKept', streamName: `sessionidentity-${appMessengerId}`, data: { appMessengerId, sessionId: address, origin: 'new', keptAt: expect.any(String) } }),
    ]);
    await waitFor(async () => ((await appMessengers())[0].health === 'ok' ? true : undefined), 10_000, 'health ok');
  });

  it('sends to a contact, who decrypts the text exactly, from the bot’s Session ID', async () => {
    const text = 'hello from Relay — ünïcödé, 😀, and\nnew lines';
    await send({ contactId: contact.sessionId, message: text });
    const [message] = await receiveExactly(contact, 1);
    // As the contact's app shows it: from the app's name, in libsession's envelope.
    expect(message).toMatchObject({ sender: address, text, displayName: 'Session bot', sourceDevice: 1, proSigLength: 64 });
    expect(message!.sigTimestamp).toBe(message!.envelopeTimestamp);
    expect(contact.rejected).toEqual([]);
    // Onion requests by default: no call of Relay reached a storage server outside an onion path.
    // The test client calls directly, with `batch` and `get_swarm` only; Relay's own methods
    // (store, retrieve, info, get_swarm, oxend_request) arrive only through onions.
    expect(swarm.requests.filter((r) => r.via === 'onion').map((r) => r.method)).toEqual(expect.arrayContaining(['store', 'retrieve']));
    expect(swarm.requests.filter((r) => r.via === 'direct' && r.method !== 'batch' && r.method !== 'get_swarm')).toEqual([]);
  });

  it("polls the contact's reply, and a reply to its contactId reaches the contact", async () => {
    await contact.send(address, 'a reply from the contact');
    const [polled] = await pollMessages(relay, key, 1);
    expect(polled).toEqual({
      appId,
      messenger: 'session',
      contactId: contact.sessionId,
      messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
      content: 'a reply from the contact',
      timestamp: expect.any(Number),
      isGroupMessage: false,
      isCommand: false,
    });
    await send({ contactId: polled.contactId, message: 'and back to you' });
    expect((await receiveExactly(contact, 1)).map((m) => [m.sender, m.text])).toEqual([[address, 'and back to you']]);
  });

  it('splits a long message with split: true into parts within Session’s 2000 characters', async () => {
    const long = `${'word '.repeat(500)}end`;
    await send({ contactId: contact.sessionId, message: long, split: true });
    const parts = await receiveExactly(contact, 2);
    expect(parts.map((p) => p.text.slice(0, 6))).toEqual(['(1/2) ', '(2/2) ']);
    expect(parts.every((p) => [...p.text].length <= 2000)).toBe(true);
  });

  it('answers every group route for a Session app-messenger with 400', async () => {
    const body = { appMessengerId, contactId: contact.sessionId };
    const answers = await Promise.all([
      dashboard(relay, account, 'GET', `/group/members?appMessengerId=${appMessengerId}`),
      dashboard(relay, account, 'GET', `/group/invite-link?appMessengerId=${appMessengerId}`),
      dashboard(relay, account, 'POST', '/group/members/add', body),
      dashboard(relay, account, 'POST', '/group/members/remove', body),
      dashboard(relay, account, 'POST', '/group/promote-admin', body),
      dashboard(relay, account, 'POST', '/group/demote-admin', body),
    ]);
    for (const answer of answers) expect(answer).toEqual({ status: 400, body: { success: false, error: GROUPS_REFUSED } });
  });

  it('holds deliveries back while no storage server answers, and says why in health', async () => {
    for (const node of swarm.nodes) swarm.setDown(node.index, true);
    try {
      await waitFor(async () => ((await appMessengers())[0].health === 'daemon-unreachable' ? true : undefined), 15_000, 'health daemon-unreachable');
      // Which of the two depends on whether the onion paths had failed their calls yet when health was asked.
      expect((await appMessengers())[0].healthReason).toMatch(/^The Session network cannot be reached \((no seed or service node answered|no onion path can be built)\)$/);
      await send({ contactId: contact.sessionId, message: 'sent during the outage' });
      await new Promise((r) => setTimeout(r, 1500));
    } finally {
      for (const node of swarm.nodes) swarm.setDown(node.index, false);
    }
    expect((await receiveExactly(contact, 1)).map((m) => m.text)).toEqual(['sent during the outage']);
    await waitFor(async () => ((await appMessengers())[0].health === 'ok' ? true : undefined), 15_000, 'health ok again');
  });

  it('loses and repeats nothing a contact wrote across a SIGKILL; what was accepted is sent after it', async () => {
    await contact.send(address, 'before the kill');
    expect((await pollMessages(relay, key, 1)).map((m) => m.content)).toEqual(['before the kill']);
    for (let i = 1; i <= 3; i++) await send({ contactId: contact.sessionId, message: `out ${i}` });
    await relay.kill();
    await contact.send(address, 'while Relay was down 1');
    await contact.send(address, 'while Relay was down 2');
    // Restarted as an operator who imports identities would run it (tested next): the bot keeps its identity.
    await start({ SESSION_IDENTITIES: 'import' }, relay.dataDir);
    // The nodes hand the restarted Relay everything they hold (it has no last_hash yet): the gateway records each message once.
    const polled = await pollMessages(relay, key, 2, 20_000);
    expect(polled.map((m) => m.content).sort()).toEqual(['while Relay was down 1', 'while Relay was down 2']);
    await new Promise((r) => setTimeout(r, 1500));
    expect((await api(relay, 'GET', '/messages/poll?limit=50', { key })).body.messages).toEqual([]);
    // Outbound: accepted before the kill, delivered after it. A kill between a store and its record
    // repeats that one message once at most (docs/durability.md); nothing is lost.
    const out = (await receiveExactly(contact, 3)).map((m) => m.text);
    expect([...new Set(out)].sort()).toEqual(['out 1', 'out 2', 'out 3']);
    for (const text of new Set(out)) expect(out.filter((t) => t === text).length).toBeLessThanOrEqual(2);
    expect((await appMessengers())[0]).toMatchObject({ id: appMessengerId, address, status: 'active' });
  });

  it("imports an operator's Session account with the CLI, serves it without a restart, and exports its recovery phrase", async () => {
    // SESSION_IDENTITIES=import (the restart above): a new Session app-messenger waits for an identity.
    const created = await dashboard(relay, account, 'POST', '/apps', { name: 'Imported bot', protocol: ['session'] });
    expect(created.status).toBe(200);
    const secondAppId = created.body.id as string;
    const [second] = await appMessengers(secondAppId);
    expect(second).toMatchObject({ messenger: 'session', address: null, status: 'processing' });
    const secondKey = (await createKey(relay, account, [secondAppId])).secret;

    // The operator's account (its seed, as the test client holds it).
    const owner = SessionTestClient.random({ seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed });
    const mnemonic = seedToMnemonic(Buffer.from(owner.seedHex, 'hex'));
    const imported = await relay.cli(['session-messenger', 'import', '--app-messenger', second.id, '--mnemonic', mnemonic]);
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout).toBe(`imported ${owner.sessionId}\n`);
    expect((await relay.cli(['session-messenger', 'import', '--app-messenger', second.id, '--seed', owner.seedHex])).stdout).toBe(`already imported ${owner.sessionId}\n`);
    await waitFor(async () => ((await appMessengers(secondAppId))[0].status === 'active' ? true : undefined), 10_000, 'the imported app-messenger active');
    expect((await appMessengers(secondAppId))[0]).toMatchObject({ id: second.id, address: owner.sessionId });

    // The running Relay polls the imported identity at once, and sends from it.
    await contact.send(owner.sessionId, 'to the imported bot');
    expect((await pollMessages(relay, secondKey, 1, 20_000)).map((m) => [m.contactId, m.content])).toEqual([[contact.sessionId, 'to the imported bot']]);
    await send({ contactId: contact.sessionId, message: 'from the imported bot' }, secondKey, secondAppId);
    expect((await receiveExactly(contact, 1)).map((m) => [m.sender, m.text])).toEqual([[owner.sessionId, 'from the imported bot']]);

    // An app-messenger keeps its identity: importing onto the first one is refused.
    const refused = await relay.cli(['session-messenger', 'import', '--app-messenger', appMessengerId, '--mnemonic', mnemonic]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`relay: The app-messenger ${appMessengerId} already has the Session identity ${address}`);

    const exported = await relay.cli(['session-messenger', 'export', '--app-messenger', second.id]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout).toBe(`${mnemonic}\n`);
    // The phrase of the identity Relay made gives back its Session ID (derived by the test client's own code).
    const first = await relay.cli(['session-messenger', 'export', '--app-messenger', appMessengerId]);
    expect(first.code, first.stderr).toBe(0);
    expect(SessionTestClient.fromSeed(mnemonicToSeed(first.stdout).toString('hex'), { seedUrl: swarm.seedUrl, seedCa: swarm.certificates.seed }).sessionId).toBe(address);
    // No seed, no phrase in any log line.
    expect(relay.output()).not.toContain(mnemonic);
    expect(relay.output()).not.toContain(owner.seedHex);
  });
});
