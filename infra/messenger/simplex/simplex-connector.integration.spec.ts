/**
 * What the SimpleX connector does beyond the connector contract, on the protocol-faithful fake of
 * simplex-chat: one SimpleX user per app-messenger with an auto-accepting address, sends as the
 * right user, redeliveries keep their id, malformed frames and unknown events are skipped, a lost
 * connection is reopened, and an unreachable simplex-chat is unavailable, not a failed attempt.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { eventually } from '../../../test/support/eventually.ts';
import type { FakeSimplexChat } from '../../../test/support/fake-simplex-chat.ts';
import { quietSimplexLog, simplexFixture } from '../../../test/support/simplex-fixture.ts';
import type { InboundFromContact } from '../port.ts';
import { SimplexUnavailableError } from './simplex-client.ts';
import { SimplexConnector, userNameOf } from './simplex-connector.ts';

describe('SimpleX connector (fake simplex-chat)', () => {
  let fake: FakeSimplexChat;
  let connector: SimplexConnector;
  let from: string;
  let contacts: readonly [string, string];
  let teardown: () => Promise<void>;
  const received: InboundFromContact[] = [];

  beforeEach(async () => {
    const fixture = await simplexFixture();
    ({ fake, from, contacts, teardown } = fixture);
    connector = fixture.connector as SimplexConnector;
    received.length = 0;
  });
  afterEach(() => teardown());

  const listening = async () => {
    await connector.listen(async (m) => void received.push(m));
    await eventually(() => expect(fake.listeners).toBe(1), 5_000);
  };

  it('gives each app-messenger a SimpleX user of its own with an auto-accepting address, and finds it again', async () => {
    expect(fake.userNamed(userNameOf('am_contract'))).toMatchObject({ autoAccept: true });
    expect(await connector.provision('am_contract')).toBe(from);
    const other = await connector.provision('am_other');
    expect(other).not.toBe(from);
    expect(fake.userIdOfAddress(other)).toBe(fake.userNamed(userNameOf('am_other'))!.userId);
    expect(() => fake.connect(other, 'carol')).not.toThrow();
  });

  it("sends each bot's replies as its own user, however they interleave", async () => {
    const other = await connector.provision('am_other');
    const carol = String(fake.connect(other, 'carol'));
    const results = await Promise.all([
      connector.deliver({ messageId: 'a1', from, contactId: contacts[0], text: 'from A' }),
      connector.deliver({ messageId: 'b1', from: other, contactId: carol, text: 'from B' }),
      connector.deliver({ messageId: 'a2', from, contactId: contacts[1], text: 'from A again' }),
    ]);
    expect(results).toEqual([{ ok: true }, { ok: true }, { ok: true }]);
    expect(fake.sent.map((s) => [s.userId, s.text])).toEqual([
      [fake.userIdOfAddress(from), 'from A'],
      [fake.userIdOfAddress(other), 'from B'],
      [fake.userIdOfAddress(from), 'from A again'],
    ]);
  });

  it('hands a redelivered item on with the same external id, and a group sender without a contact by member id', async () => {
    await listening();
    fake.contactWrites(Number(contacts[0]), 'twice', 77);
    fake.contactWrites(Number(contacts[0]), 'twice', 77);
    const groupId = fake.createGroup(fake.userIdOfAddress(from)!);
    fake.memberWrites(groupId, { groupMemberId: 4242 }, 'no contact');
    await eventually(() => expect(received).toHaveLength(3));
    expect(received[1]!.externalId).toBe(received[0]!.externalId);
    expect(received[2]).toMatchObject({ to: from, contactId: 'member-4242', groupId: String(groupId), text: 'no contact' });
  });

  it('skips malformed frames and unknown events, and goes on', async () => {
    await listening();
    fake.writeRaw('not json');
    fake.writeRaw(JSON.stringify({ resp: { noType: true } }));
    fake.writeRaw(JSON.stringify({ resp: { type: 'contactSndReady', user: {}, contact: {} } }));
    fake.writeRaw(JSON.stringify({ resp: { type: 'newChatItems', user: { userId: 1 }, chatItems: [{ broken: true }] } }));
    fake.contactWrites(Number(contacts[1]), 'after the noise');
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['after the noise']));
  });

  it('reopens a lost connection and receives what comes after', async () => {
    await listening();
    const before = fake.connections;
    fake.dropConnections();
    await eventually(() => expect([fake.connections, fake.listeners]).toEqual([before + 1, 1]), 10_000);
    await eventually(async () => expect(await connector.deliver({ messageId: 'r1', from, contactId: contacts[0], text: 'back' })).toEqual({ ok: true }), 10_000);
    fake.contactWrites(Number(contacts[0]), 'after the cut');
    await eventually(() => expect(received.map((m) => m.text)).toEqual(['after the cut']));
  });

  it('reports an unreachable simplex-chat as unavailable, for sends and for health', async () => {
    expect(await connector.checkHealth()).toEqual({ reachable: true, identities: new Set([from]) });
    await fake.close();
    const gone = new SimplexConnector({ url: fake.url, timeoutMs: 1_000, log: quietSimplexLog, reconnect: { minMs: 50, maxMs: 100 } });
    await expect(gone.deliver({ messageId: 'x', from, contactId: contacts[0], text: 'hi' })).rejects.toBeInstanceOf(SimplexUnavailableError);
    expect(await gone.checkHealth()).toEqual({ reachable: false, reason: 'simplex-chat cannot be reached' });
    await gone.close();
  });

  it('after a restart with two bots, selects each bot as the active user: health, routing and sends reach the right bot (issue 24, item 1)', async () => {
    const other = await connector.provision('am_other'); // now the active user of simplex-chat
    const carol = String(fake.connect(other, 'carol'));
    await connector.close();
    // A new connector (Relay restarted) knows none of the addresses.
    const restarted = new SimplexConnector({ url: fake.url, timeoutMs: 5_000, log: quietSimplexLog, reconnect: { minMs: 50, maxMs: 200 }, retry: { minMs: 10, maxMs: 50 } });
    connector = restarted;
    const got: InboundFromContact[] = [];
    await restarted.listen(async (m) => void got.push(m));
    await eventually(() => expect(fake.listeners).toBe(1), 5_000);
    expect(await restarted.checkHealth()).toEqual({ reachable: true, identities: new Set([from, other]) });
    fake.contactWrites(Number(contacts[0]), 'to the first bot');
    fake.contactWrites(Number(carol), 'to the second bot');
    await eventually(() => expect(got.map((m) => [m.to, m.text])).toEqual([[from, 'to the first bot'], [other, 'to the second bot']]));
    // Re-provisioning a bot that is not the active user finds its address again.
    expect(await restarted.provision('am_contract')).toBe(from);
    expect(await restarted.provision('am_other')).toBe(other);
    expect(await restarted.provision('am_contract')).toBe(from);
    expect(await restarted.deliver({ messageId: 'x1', from, contactId: contacts[0], text: 'reply A' })).toEqual({ ok: true });
    expect(await restarted.deliver({ messageId: 'x2', from: other, contactId: carol, text: 'reply B' })).toEqual({ ok: true });
    expect(fake.sent.slice(-2).map((s) => [s.userId, s.text])).toEqual([
      [fake.userIdOfAddress(from), 'reply A'],
      [fake.userIdOfAddress(other), 'reply B'],
    ]);
  });

  it('takes differentActiveUser as a refusal for now: the delivery waits, no attempt is spent', async () => {
    fake.failNextSend('error/differentActiveUser');
    await expect(connector.deliver({ messageId: 'd1', from, contactId: contacts[0], text: 'hi' })).rejects.toBeInstanceOf(SimplexUnavailableError);
  });

  it('keeps contact and group member ids apart: a member-only sender is member-<id>, which a direct send refuses and group changes find (issue 24, item 2)', async () => {
    await listening();
    const userId = fake.userIdOfAddress(from)!;
    const groupId = fake.createGroup(userId);
    // simplex-chat's tables number from 1 each: this member's id is a contact's id too.
    const memberId = fake.memberJoinsByLink(groupId);
    expect(contacts).toContain(String(memberId));
    fake.memberWrites(groupId, { groupMemberId: memberId }, 'from a member');
    await eventually(() => expect(received.map((m) => m.contactId)).toEqual([`member-${memberId}`]));
    expect(await connector.deliver({ messageId: 'm1', from, contactId: `member-${memberId}`, text: 'direct' })).toEqual({
      ok: false,
      permanent: true,
      reason: 'A group member without a direct contact of the bot cannot be written to directly: reply in the group, with its groupId',
    });
    expect(await connector.deliver({ messageId: 'm2', from, contactId: `member-${memberId}`, groupId: String(groupId), text: 'in the group' })).toEqual({ ok: true });
    await connector.groups.setRole(from, String(groupId), `member-${memberId}`, 'admin');
    expect(fake.group(groupId)!.members.find((m) => m.groupMemberId === memberId)!.memberRole).toBe('admin');
    expect(await connector.groups.members(from, String(groupId))).toEqual([{ contactId: `member-${memberId}`, role: 'admin', status: 'joined' }]);
    await expect(connector.groups.addMember(from, String(groupId), `member-${memberId}`)).rejects.toThrow('Only a contact of the bot can be added to the group');
  });

  it('names groups as simplex-chat takes them, whatever the app is called', async () => {
    for (const name of ['Support bot', '  --- Sales!!!!! team ', '😀 bot', '"quoted" @name #tag', '....', 'x'.repeat(80), 'Ärzte & Co. — Notdienst']) {
      const groupId = await connector.groups.createGroup(from, name);
      expect(fake.group(Number(groupId)), name).toBeDefined();
    }
  });

  it('says in its health that a simplex-chat older than 6.4.3 is not one it works with', async () => {
    fake.version = '6.3.7';
    fake.dropConnections(); // the version is asked once per connection
    await eventually(async () =>
      expect(await connector.checkHealth()).toEqual({ reachable: false, reason: 'simplex-chat 6.3.7 is older than 6.4.3, the oldest Relay works with (bot profiles, /_address_settings)' }),
    10_000);
    fake.version = '6.4.3';
    fake.dropConnections();
    await eventually(async () => expect(await connector.checkHealth()).toEqual({ reachable: true, identities: new Set([from]) }), 10_000);
  });
});
