/**
 * The six group routes end to end on the simulator: each app-messenger's group is made by its first
 * member or invite link, changes are carried out by the pipeline and recorded as events, the member
 * list comes back opened, and contact ids never show in the public history.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, createAccount, createApp, createKey, dashboard, turnOnInviteLink, waitFor, type Account } from '../support/account-fixture.ts';
import { startRelayProcess, type RelayProcess } from '../support/relay-process.ts';

const ALICE = '+15550100001';
const BOB = '+15550100002';

describe('group routes (simulator)', () => {
  let relay: RelayProcess;
  let account: Account;
  let signal: string;
  let session: string;
  let appId: string;

  beforeAll(async () => {
    relay = await startRelayProcess({ env: { GROUP_CHANGE_WAIT_MS: '3000' } });
    account = await createAccount(relay);
    const app = await createApp(relay, account, ['signal', 'session'], 'Group bot');
    appId = app.appId;
    signal = app.messengers.find((m) => m.messenger === 'signal')!.id;
    session = app.messengers.find((m) => m.messenger === 'session')!.id;
  });
  afterAll(async () => {
    await relay?.stop();
  });

  const members = (appMessengerId: string) => dashboard(relay, account, 'GET', `/group/members?appMessengerId=${appMessengerId}`);

  it('shows no group before the first change, and refuses to remove from it', async () => {
    expect(await members(signal)).toEqual({
      status: 200,
      body: { appMessengerId: signal, messenger: 'signal', groupId: null, members: [], memberCount: 0, syncedAt: null, changes: [] },
    });
    expect(await dashboard(relay, account, 'POST', '/group/members/remove', { appMessengerId: signal, contactId: ALICE })).toEqual({
      status: 400,
      body: { success: false, error: 'The app messenger has no group yet: add a member or get its invite link first' },
    });
  });

  it('adds members (making the group), promotes and demotes, removes, and lists them opened', async () => {
    const added = await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId: signal, contactId: ALICE });
    expect(added.status).toBe(200);
    expect(added.body).toEqual({ success: true, data: { requestId: expect.stringMatching(/^grq_[0-9a-f]{24}$/), appMessengerId: signal, operation: 'add-member', contactId: ALICE, status: 'done' } });
    expect((await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId: signal, contactId: ` ${BOB} ` })).body.data).toMatchObject({ contactId: BOB, status: 'done' });
    expect((await dashboard(relay, account, 'POST', '/group/promote-admin', { appMessengerId: signal, contactId: BOB })).status).toBe(200);

    const listed = await members(signal);
    expect(listed.status).toBe(200);
    expect(listed.body).toEqual({
      appMessengerId: signal,
      messenger: 'signal',
      groupId: expect.stringMatching(/^[A-Za-z0-9+/]{43}=$/),
      members: [
        { contactId: ALICE, role: 'member', status: 'joined' },
        { contactId: BOB, role: 'admin', status: 'joined' },
      ],
      memberCount: 2,
      syncedAt: expect.any(String),
      changes: [
        { requestId: added.body.data.requestId, operation: 'add-member', status: 'done' },
        { requestId: expect.any(String), operation: 'add-member', status: 'done' },
        { requestId: expect.any(String), operation: 'promote-admin', status: 'done' },
      ],
    });

    expect((await dashboard(relay, account, 'POST', '/group/demote-admin', { appMessengerId: signal, contactId: BOB })).status).toBe(200);
    expect((await dashboard(relay, account, 'POST', '/group/members/remove', { appMessengerId: signal, contactId: ALICE })).status).toBe(200);
    expect((await members(signal)).body.members).toEqual([{ contactId: BOB, role: 'member', status: 'joined' }]);
  });

  it("answers the messenger's refusal with 400 and records it", async () => {
    const refused = await dashboard(relay, account, 'POST', '/group/members/remove', { appMessengerId: signal, contactId: '+15550100009' });
    expect(refused).toEqual({ status: 400, body: { success: false, error: 'Contact is not a member of the group' } });
    expect((await members(signal)).body.changes.at(-1)).toEqual({ requestId: expect.any(String), operation: 'remove-member', status: 'failed', reason: 'Contact is not a member of the group' });
  });

  it('turns the invite link on (POST), gives it by GET, the same each time, and says Session groups have none', async () => {
    const read = (appMessengerId: string) => dashboard(relay, account, 'GET', `/group/invite-link?appMessengerId=${appMessengerId}`);
    const groupId = (await members(signal)).body.groupId;
    // Reading changes nothing (issue 47): no link until it is turned on.
    expect(await read(signal)).toEqual({ status: 200, body: { appMessengerId: signal, messenger: 'signal', groupId, inviteLink: null } });
    const link = await turnOnInviteLink(relay, account, signal);
    expect(link.status).toBe(200);
    expect(link.body).toEqual({ appMessengerId: signal, messenger: 'signal', groupId, inviteLink: expect.stringMatching(/^https:\/\/signal\.group\/#/) });
    expect(await read(signal)).toEqual(link);
    expect(await turnOnInviteLink(relay, account, signal)).toEqual(link);
    expect(await turnOnInviteLink(relay, account, session)).toEqual({ status: 400, body: { success: false, error: 'Session groups have no invite links' } });
    expect(await read(session)).toMatchObject({ status: 200, body: { inviteLink: null } });
  });

  it('answers 202 while the messenger has not answered, and the change goes on', async () => {
    // Three refusals for now: tried at once, after 1 s and after 3 s more, longer than the route waits (3 s).
    expect((await relay.cli(['simulate', 'fail', '--messenger', 'signal', '--contact', '+15550100003', '--times', '3'])).code).toBe(0);
    const pending = await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId: signal, contactId: '+15550100003' });
    expect(pending).toEqual({ status: 202, body: { success: true, data: { requestId: expect.any(String), appMessengerId: signal, operation: 'add-member', contactId: '+15550100003', status: 'pending' } } });
    const outcome = await waitFor(async () => (await members(signal)).body.changes.find((c: { requestId: string; status: string }) => c.requestId === pending.body.data.requestId && c.status !== 'pending'), 10_000, 'the change');
    expect(outcome).toEqual({ requestId: pending.body.data.requestId, operation: 'add-member', status: 'failed', reason: 'Simulated failure' });
  });

  it('sends into the group with the groupId the members route gives', async () => {
    const key = (await createKey(relay, account, [appId])).secret;
    const { groupId } = (await members(signal)).body;
    const sent = await api(relay, 'POST', '/messages/send', { key, body: { messages: [{ appId, messenger: 'signal', contactId: BOB, groupId, message: 'hello group' }] } });
    expect(sent.status).toBe(202);
    const outbox = await waitFor(async () => {
      const lines = (await relay.cli(['simulate', 'outbox'])).stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l));
      return lines.find((d: { text: string }) => d.text === 'hello group');
    });
    expect(outbox).toMatchObject({ groupId, ok: true });
  });

  it('refuses bad bodies, unknown and foreign app-messengers in the interface shapes', async () => {
    const other = await createAccount(relay);
    expect(await dashboard(relay, other, 'GET', `/group/members?appMessengerId=${signal}`)).toEqual({ status: 400, body: { success: false, error: 'App messenger not found' } });
    expect(await dashboard(relay, other, 'POST', '/group/members/add', { appMessengerId: signal, contactId: ALICE })).toEqual({ status: 400, body: { success: false, error: 'App messenger not found' } });
    expect(await dashboard(relay, account, 'GET', '/group/members?appMessengerId=am_000000000000000000000000')).toEqual({ status: 400, body: { success: false, error: 'App messenger not found' } });
    expect(await dashboard(relay, account, 'GET', '/group/members')).toEqual({ status: 400, body: { success: false, error: 'Missing required field: appMessengerId' } });
    expect(await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId: signal })).toEqual({ status: 400, body: { success: false, error: 'Missing required field: contactId' } });
    expect(await dashboard(relay, account, 'POST', '/group/promote-admin', { appMessengerId: signal, contactId: 'x'.repeat(257) })).toEqual({ status: 400, body: { success: false, error: 'ContactId exceeds 256 character limit' } });
    expect(await dashboard(relay, account, 'POST', '/group/members/add', { appMessengerId: signal, contactId: 'alice' })).toEqual({
      status: 400,
      body: { success: false, error: 'Invalid contactId for signal: expected an E.164 phone number or a registered username' },
    });
    const noCookie = await fetch(`${relay.url}/dashboard/api/dashboard/group/members?appMessengerId=${signal}`);
    expect({ status: noCookie.status, body: await noCookie.json() }).toEqual({ status: 400, body: { success: false, error: 'Session token is required' } });
  });

  it('records each later change of the member list as what changed, not the whole list (issue 23, item 7)', async () => {
    const events = await relay.cli(['events', '--category', 'group']);
    const lines = events.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; data: Record<string, unknown> });
    const lists = lines.filter((e) => e.type === 'GroupMembersSynced' || e.type === 'GroupMembersChanged');
    expect(lists[0]!.type).toBe('GroupMembersSynced');
    const changed = lists.filter((e) => e.type === 'GroupMembersChanged');
    expect(changed.length).toBeGreaterThan(0);
    for (const e of changed) {
      // One member sealed per change (its ref, digest and seal are withheld from the public history).
      expect((e.data.changed as unknown[]).length + (e.data.removedRefs === undefined ? 0 : 1)).toBeLessThanOrEqual(2);
      expect(Object.keys(e.data).sort()).toEqual(['appId', 'appMessengerId', 'changed', 'changedAt', 'digest', 'keyId', 'memberCount', 'messenger']);
    }
  });

  it('keeps contact and group ids out of the public history', async () => {
    const events = await relay.cli(['events', '--category', 'group']);
    expect(events.code).toBe(0);
    const lines = events.stdout.trim().split('\n').map((l) => JSON.parse(l));
    expect(lines.map((e: { type: string }) => e.type)).toContain('GroupMemberAdded');
    expect(lines.map((e: { type: string }) => e.type)).toContain('GroupMembersSynced');
    const { groupId } = (await members(signal)).body;
    for (const secret of [ALICE, BOB, groupId, 'signal.group']) expect(events.stdout).not.toContain(secret);
  });

  it('limits group changes per user, in the account API shape (429)', async () => {
    const limited = await startRelayProcess({ env: { GROUP_CHANGE_WAIT_MS: '0', GROUP_CHANGES_PER_MIN: '3' } });
    try {
      const owner = await createAccount(limited);
      const am = (await createApp(limited, owner, ['signal'], 'Busy bot')).messengers[0]!.id;
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) statuses.push((await dashboard(limited, owner, 'POST', '/group/members/add', { appMessengerId: am, contactId: `+1555010020${i}` })).status);
      expect(statuses.every((status) => status === 200 || status === 202)).toBe(true);
      const res = await fetch(`${limited.url}/dashboard/api/dashboard/group/members/add`, {
        method: 'POST',
        headers: { cookie: owner.cookie, 'content-type': 'application/json' },
        body: JSON.stringify({ appMessengerId: am, contactId: '+15550100209' }),
      });
      expect(res.status).toBe(429);
      expect(await res.json()).toEqual({ success: false, error: 'Too many group changes: try again later' });
      // As the account API's other limits (sign-in) say it: Retry-After in seconds.
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      // Reading the group is not a change.
      expect((await dashboard(limited, owner, 'GET', `/group/members?appMessengerId=${am}`)).status).toBe(200);
    } finally {
      await limited.stop();
      await limited.cleanup();
    }
  });

  it('forgets the group with its app', async () => {
    const deleted = await fetch(`${relay.url}/dashboard/api/dashboard/apps/${appId}`, { method: 'DELETE', headers: { cookie: account.cookie, 'content-type': 'application/json' } });
    expect(deleted.status).toBe(200);
    expect(await members(signal)).toEqual({ status: 400, body: { success: false, error: 'App messenger not found' } });
    await waitFor(async () => {
      const shred = await relay.cli(['events', '--category', 'shred']);
      return shred.stdout.includes(`"subject":"group-${signal}"`) ? true : undefined;
    }, 10_000, 'the group key destroyed');
  });
});
