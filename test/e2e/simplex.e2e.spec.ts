/**
 * SimpleX end to end through the public API, with Relay on simplex-chat's WebSocket API: the
 * daemon is the protocol-faithful fake (test/support/fake-simplex-chat.ts), since simplex-chat
 * cannot be installed here. A new app-messenger gets a SimpleX user and an auto-accepting address
 * of its own; a contact who connects through it and writes is polled; replies reach the daemon,
 * in a group too, across a Relay restart and a dropped connection.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FakeSimplexChat } from '../support/fake-simplex-chat.ts';
import { api, createAccount, pollMessages, createApp, createKey, dashboard, turnOnInviteLink, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

describe('SimpleX on simplex-chat (fake daemon)', () => {
  let fake: FakeSimplexChat;
  let relay: RelayProcess;
  let appId: string;
  let address: string;
  let appMessengerId: string;
  let key: string;
  let contact: number;
  let account: Account;
  const started: RelayProcess[] = [];

  const start = async (dataDir?: string) => {
    relay = await startRelayProcess({ env: { SIMPLEX_WS_URL: fake.url, RATE_LIMIT_POLL_PER_MIN: '100000' }, ...(dataDir ? { dataDir } : {}) });
    started.push(relay);
    await waitFor(() => (fake.listeners > 0 ? true : undefined), 10_000, 'Relay connected to simplex-chat');
  };
  const pollAll = (count: number) => pollMessages(relay, key, count);
  const reply = async (message: Record<string, string>) => {
    const res = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'simplex', ...message }] } });
    expect(res.status).toBe(202);
  };

  beforeAll(async () => {
    fake = await new FakeSimplexChat().start();
    await start();
    account = await createAccount(relay);
    const app = await createApp(relay, account, ['simplex']);
    appId = app.appId;
    address = app.messengers[0]!.address!;
    appMessengerId = app.messengers[0]!.id;
    key = (await createKey(relay, account, [appId])).secret;
  });

  afterAll(async () => {
    for (const r of started) await r.stop().catch(() => undefined);
    await relay?.cleanup();
    await fake?.close();
  });

  it("gives the app-messenger a SimpleX user and an auto-accepting contact address, its 'address'", () => {
    const userId = fake.userIdOfAddress(address);
    expect(userId).toBeDefined();
    expect(fake.userNamed(`relay-${appMessengerId}`)).toMatchObject({ userId, autoAccept: true });
    contact = fake.connect(address, 'alice');
    expect(contact).toBeGreaterThan(0);
  });

  it("polls a contact's message and delivers the reply to them", async () => {
    fake.contactWrites(contact, 'hello relay');
    const [message] = await pollAll(1);
    expect(message).toEqual({
      appId,
      messenger: 'simplex',
      contactId: String(contact),
      messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
      content: 'hello relay',
      timestamp: expect.any(Number),
      isGroupMessage: false,
      isCommand: false,
    });
    await reply({ contactId: String(contact), message: 'hi back' });
    await waitFor(() => (fake.sent.some((s) => s.text === 'hi back') ? true : undefined), 15_000, 'the reply at simplex-chat');
    expect(fake.sent.find((s) => s.text === 'hi back')).toEqual({ userId: fake.userIdOfAddress(address), contactId: contact, text: 'hi back' });
  });

  it('does the same in a group', async () => {
    const groupId = fake.createGroup(fake.userIdOfAddress(address)!);
    fake.memberWrites(groupId, { groupMemberId: 31, memberContactId: contact }, 'in the group');
    const [message] = await pollAll(1);
    expect(message).toMatchObject({ contactId: String(contact), groupId: String(groupId), isGroupMessage: true, content: 'in the group' });
    await reply({ contactId: String(contact), groupId: String(groupId), message: 'to the group' });
    await waitFor(() => (fake.sent.some((s) => s.text === 'to the group') ? true : undefined), 15_000, 'the group reply');
    expect(fake.sent.find((s) => s.text === 'to the group')).toMatchObject({ groupId });
  });

  it("administers the app-messenger's group as its SimpleX user: invitations, their acceptance, roles, the link", async () => {
    const added = await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId, contactId: String(contact) });
    expect(added).toEqual({ status: 200, body: { success: true, data: { requestId: expect.any(String), appMessengerId, operation: 'add-member', contactId: String(contact), status: 'done' } } });
    const members = () => dashboard(relay, account, 'GET', `/group/members?appMessengerId=${appMessengerId}`);
    const invited = await members();
    expect(invited.body).toMatchObject({ messenger: 'simplex', groupId: expect.stringMatching(/^\d+$/), members: [{ contactId: String(contact), role: 'member', status: 'invited' }] });
    const group = fake.group(Number(invited.body.groupId))!;
    expect(group).toMatchObject({ userId: fake.userIdOfAddress(address), name: 'Support_bot' });

    // The contact accepts: simplex-chat tells the bot (joinedGroupMember), and the list is read again at once.
    fake.acceptInvitation(group.groupId, contact);
    await waitFor(async () => ((await members()).body.members[0]?.status === 'joined' ? true : undefined), 10_000, 'the member joined');
    // Someone the bot has no contact for joins by the link: listed as member-<group member id>, as their messages give it.
    const stranger = fake.memberJoinsByLink(group.groupId);
    await waitFor(async () => ((await members()).body.memberCount === 2 ? true : undefined), 10_000, 'the member who joined by the link');
    expect((await members()).body.members).toContainEqual({ contactId: `member-${stranger}`, role: 'member', status: 'joined' });
    expect((await dashboard(relay, account, 'POST', '/group/promote-admin', { appMessengerId, contactId: String(contact) })).status).toBe(200);
    expect(group.members[0]).toMatchObject({ memberContactId: contact, memberRole: 'admin' });

    const link = await turnOnInviteLink(relay, account, appMessengerId);
    expect(link).toEqual({ status: 200, body: { appMessengerId, messenger: 'simplex', groupId: invited.body.groupId, inviteLink: group.link!.connShortLink } });
    expect(await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId, contactId: '424242' })).toEqual({
      status: 400,
      body: { success: false, error: "The contact is not a contact of the bot's SimpleX user" },
    });
  });

  it('goes on after a dropped connection and a Relay restart', async () => {
    const before = fake.connections;
    fake.dropConnections();
    await waitFor(() => (fake.connections > before && fake.listeners > 0 ? true : undefined), 15_000, 'Relay back on simplex-chat');
    fake.contactWrites(contact, 'after the cut');
    expect((await pollAll(1)).map((m) => m.content)).toEqual(['after the cut']);
    await relay.stop();
    const beforeRestart = fake.connections;
    await start(relay.dataDir);
    await waitFor(() => (fake.connections > beforeRestart ? true : undefined), 15_000, 'the new Relay on simplex-chat');
    fake.contactWrites(contact, 'after the restart');
    expect((await pollAll(1)).map((m) => m.content)).toEqual(['after the restart']);
    await reply({ contactId: String(contact), message: 'still here' });
    await waitFor(() => (fake.sent.some((s) => s.text === 'still here') ? true : undefined), 15_000, 'the reply after the restart');
  });
});
