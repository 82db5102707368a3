import { describe, it } from 'vitest';
import { deciderSpec } from '../../test/support/decider-spec.ts';
import { GROUP_FULL_SYNC_EVERY, groupDecider, MAX_PENDING_GROUP_CHANGES } from './decider.ts';
import type { GroupEvent, GroupOperation } from './events.ts';

const now = new Date('2026-01-02T03:04:05.000Z');
const at = now.toISOString();
const spec = deciderSpec(groupDecider);
const ref = { appId: 'app_1', appMessengerId: 'am_1', messenger: 'signal' as const };
const request = (requestId: string, operation: GroupOperation, keyId = 'k1') => ({
  type: 'RequestGroupChange' as const,
  data: { ...ref, requestId, operation, sealed: operation === 'invite-link' ? null : `s2:${requestId}`, keyId, groupName: 'Bot', now },
});
const requested = (requestId: string, operation: GroupOperation): GroupEvent => ({
  type: 'GroupChangeRequested',
  data: { ...ref, requestId, operation, sealed: operation === 'invite-link' ? null : `s2:${requestId}`, keyId: 'k1', groupName: 'Bot', requestedAt: at },
});
const created: GroupEvent = { type: 'GroupCreated', data: { ...ref, requestId: 'r1', sealed: 's2:group', keyId: 'k1', createdAt: at } };
const added: GroupEvent = { type: 'GroupMemberAdded', data: { ...ref, requestId: 'r1', sealed: 's2:alice', keyId: 'k1', changedAt: at } };
const member = (name: string, role = 'member') => ({ memberRef: `ref-${name}`, memberDigest: `digest-${name}-${role}`, sealed: `s2:${name}-${role}` });
const members = (digest: string, list = [member('alice')]) => ({ type: 'RecordGroupMembers' as const, data: { ...ref, members: list, keyId: 'k1', digest, now } });
const synced = (digest: string, list = [member('alice')]): GroupEvent => ({ type: 'GroupMembersSynced', data: { ...ref, members: list, keyId: 'k1', memberCount: list.length, digest, syncedAt: at } });

describe('group decider', () => {
  it('records a request to add a member, the first of the stream', () =>
    spec.given([]).when(request('r1', 'add-member')).then([requested('r1', 'add-member')]));

  it('records a request for the invite link, which names no contact', () =>
    spec.given([]).when(request('r1', 'invite-link')).then([requested('r1', 'invite-link')]));

  it('refuses a member change without a contact, and an invite link with one', () => {
    spec.given([]).when({ ...request('r1', 'add-member'), data: { ...request('r1', 'add-member').data, sealed: null } }).thenFails('validation');
    spec.given([]).when({ ...request('r1', 'invite-link'), data: { ...request('r1', 'invite-link').data, sealed: 's2:x' } }).thenFails('validation');
  });

  it('refuses to remove, promote or demote a member before the app-messenger has a group', () => {
    for (const operation of ['remove-member', 'promote-admin', 'demote-admin'] as const)
      spec.given([]).when(request('r1', operation)).thenFails('illegal_state', 'The app messenger has no group yet: add a member or get its invite link first');
  });

  it('accepts a removal while the request that creates the group is in flight', () =>
    spec.given([requested('r1', 'add-member')]).when(request('r2', 'remove-member')).then([requested('r2', 'remove-member')]));

  it('accepts a removal once the group exists', () =>
    spec.given([requested('r1', 'add-member'), created, added]).when(request('r2', 'remove-member')).then([requested('r2', 'remove-member')]));

  it('ignores a request it already has (a retried command)', () =>
    spec.given([requested('r1', 'add-member')]).when(request('r1', 'add-member')).thenNothingHappens());

  it('refuses a request sealed with another key than the stream', () =>
    spec.given([requested('r1', 'add-member')]).when(request('r2', 'add-member', 'k2')).thenFails('conflict'));

  it(`refuses more than ${MAX_PENDING_GROUP_CHANGES} requests waiting at once`, () => {
    const waiting = Array.from({ length: MAX_PENDING_GROUP_CHANGES }, (_, i) => requested(`r${i}`, 'add-member'));
    spec.given(waiting).when(request('rx', 'add-member')).thenFails('limit');
  });

  it('records the group a request created, once', () => {
    spec.given([requested('r1', 'add-member')]).when({ type: 'RecordGroupCreated', data: { requestId: 'r1', sealed: 's2:group', now } }).then([created]);
    spec.given([requested('r1', 'add-member'), created]).when({ type: 'RecordGroupCreated', data: { requestId: 'r1', sealed: 's2:other', now } }).thenNothingHappens();
  });

  it('records the outcome of each operation as its own event', () => {
    const cases = [
      ['add-member', 'GroupMemberAdded'],
      ['remove-member', 'GroupMemberRemoved'],
      ['promote-admin', 'GroupAdminPromoted'],
      ['demote-admin', 'GroupAdminDemoted'],
      ['invite-link', 'GroupInviteLinkCreated'],
    ] as const;
    for (const [operation, type] of cases)
      spec
        .given([requested('r0', 'add-member'), { ...created, data: { ...created.data, requestId: 'r0' } }, requested('r1', operation)])
        .when({ type: 'RecordGroupChange', data: { requestId: 'r1', sealed: 's2:x', now } })
        .then([{ type, data: { ...ref, requestId: 'r1', sealed: 's2:x', keyId: 'k1', changedAt: at } } as GroupEvent]);
  });

  it('records an outcome only for a request still waiting (a replay after a crash records nothing twice)', () =>
    spec.given([requested('r1', 'add-member'), created, added]).when({ type: 'RecordGroupChange', data: { requestId: 'r1', sealed: 's2:x', now } }).thenNothingHappens());

  it('refuses an outcome before the group it changed', () =>
    spec.given([requested('r1', 'add-member')]).when({ type: 'RecordGroupChange', data: { requestId: 'r1', sealed: 's2:x', now } }).thenFails('illegal_state'));

  it('records a refusal with its reason, and the request no longer waits', () => {
    const failed: GroupEvent = { type: 'GroupChangeFailed', data: { ...ref, requestId: 'r1', operation: 'add-member', reason: 'Not registered', failedAt: at } };
    spec.given([requested('r1', 'add-member')]).when({ type: 'RecordGroupChangeFailed', data: { requestId: 'r1', reason: 'Not registered', now } }).then([failed]);
    spec.given([requested('r1', 'add-member'), failed]).when({ type: 'RecordGroupChangeFailed', data: { requestId: 'r1', reason: 'again', now } }).thenNothingHappens();
    spec.given([requested('r1', 'add-member'), failed]).when(request('r2', 'remove-member')).thenFails('illegal_state');
  });

  it('records the whole member list first, then nothing when it is the same', () => {
    spec.given([requested('r1', 'add-member'), created]).when(members('d1')).then([synced('d1')]);
    spec.given([requested('r1', 'add-member'), created, synced('d1')]).when(members('d1')).thenNothingHappens();
    spec.given([requested('r1', 'add-member')]).when(members('d1')).thenNothingHappens();
  });

  it('records what changed in the list, not the whole list (issue 23: 8.7 KB per change at 204 members)', () => {
    const team = ['alice', 'bob', 'carol', 'dave', 'frank', 'gina'].map((name) => member(name));
    const given = [requested('r1', 'add-member'), created, synced('d1', team)];
    const after = [member('alice', 'admin'), member('bob'), member('carol'), member('erin'), member('frank'), member('gina')];
    spec.given(given).when(members('d2', after)).then([
      { type: 'GroupMembersChanged', data: { ...ref, changed: [member('alice', 'admin'), member('erin')], removedRefs: ['ref-dave'], keyId: 'k1', memberCount: 6, digest: 'd2', changedAt: at } },
    ]);
    // Most of the list changed: the list itself is smaller.
    const others = ['hal', 'ida', 'jon', 'kim'].map((name) => member(name));
    spec.given(given).when(members('d3', others)).then([synced('d3', others)]);
  });

  it('records the whole list again after GROUP_FULL_SYNC_EVERY changes, and after a list sealed as one (before issue 23)', () => {
    const team = ['alice', 'bob', 'carol'].map((name) => member(name));
    const changes: GroupEvent[] = Array.from({ length: GROUP_FULL_SYNC_EVERY - 1 }, (_, i) => ({
      type: 'GroupMembersChanged',
      data: { ...ref, changed: [member('alice', `role${i}`)], removedRefs: [], keyId: 'k1', memberCount: 3, digest: `c${i}`, changedAt: at },
    }));
    const next = [member('alice', 'admin'), member('bob'), member('carol')];
    spec.given([requested('r1', 'add-member'), created, synced('d1', team), ...changes]).when(members('d9', next)).then([synced('d9', next)]);
    const legacy: GroupEvent = { type: 'GroupMembersSynced', data: { ...ref, sealed: 's2:list', keyId: 'k1', memberCount: 3, digest: 'd1', syncedAt: at } };
    spec.given([requested('r1', 'add-member'), created, legacy]).when(members('d9', next)).then([synced('d9', next)]);
  });
});
