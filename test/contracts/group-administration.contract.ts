/**
 * The contract of a connector's group administration (the simulator's, Signal's through
 * signal-cli, SimpleX's through simplex-chat): what the group routes rely on.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GroupOperationError, type GroupAdministration, type Messenger } from '../../infra/messenger/port.ts';

export interface GroupFixture {
  readonly groups: GroupAdministration;
  readonly messenger: Messenger;
  /** A bot identity of the daemon. */
  readonly from: string;
  /** Two contacts in the messenger's format that the bot can add. */
  readonly contacts: readonly [string, string];
  /** What an added contact is until they accept: `joined` where adding is immediate (Signal), `invited` where it is an invitation (SimpleX). */
  readonly addedStatus: 'joined' | 'invited';
  /** Whether the messenger's groups have invite links. */
  readonly inviteLinks: boolean;
  /** As if the contact accepted the invitation (where adding is one). */
  accept?(groupId: string, contactId: string): Promise<void>;
  teardown(): Promise<void>;
}

const refusal = async (operation: Promise<unknown>): Promise<GroupOperationError> => {
  const error = await operation.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(GroupOperationError);
  return error as GroupOperationError;
};

export const groupAdministrationContract = (name: string, makeFixture: () => Promise<GroupFixture>) => {
  describe(`GroupAdministration contract: ${name}`, () => {
    let f: GroupFixture;
    beforeEach(async () => {
      f = await makeFixture();
    });
    afterEach(async () => {
      await f.teardown();
    });

    const joined = async (groupId: string, contactId: string) => {
      await f.groups.addMember(f.from, groupId, contactId);
      if (f.addedStatus === 'invited') await f.accept!(groupId, contactId);
    };

    it('creates a group whose member list does not list the bot itself', async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      expect(typeof groupId).toBe('string');
      expect(groupId.length).toBeGreaterThan(0);
      expect(await f.groups.members(f.from, groupId)).toEqual([]);
    });

    it('adds a contact, and adding them again is no error', async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      await f.groups.addMember(f.from, groupId, f.contacts[0]);
      await f.groups.addMember(f.from, groupId, f.contacts[0]);
      expect(await f.groups.members(f.from, groupId)).toEqual([{ contactId: f.contacts[0], role: 'member', status: f.addedStatus }]);
    });

    it('promotes a member to admin and demotes them again', async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      await joined(groupId, f.contacts[0]);
      await joined(groupId, f.contacts[1]);
      await f.groups.setRole(f.from, groupId, f.contacts[1], 'admin');
      const sorted = (list: Awaited<ReturnType<GroupAdministration['members']>>) => [...list].sort((a, b) => a.contactId.localeCompare(b.contactId));
      expect(sorted(await f.groups.members(f.from, groupId))).toEqual(
        sorted([
          { contactId: f.contacts[0], role: 'member', status: 'joined' },
          { contactId: f.contacts[1], role: 'admin', status: 'joined' },
        ]),
      );
      await f.groups.setRole(f.from, groupId, f.contacts[1], 'member');
      expect((await f.groups.members(f.from, groupId)).find((m) => m.contactId === f.contacts[1])?.role).toBe('member');
    });

    it('removes a member; removing or promoting someone not in the group is refused for good', async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      await joined(groupId, f.contacts[0]);
      await f.groups.removeMember(f.from, groupId, f.contacts[0]);
      expect(await f.groups.members(f.from, groupId)).toEqual([]);
      const removed = await refusal(f.groups.removeMember(f.from, groupId, f.contacts[0]));
      expect(removed).toMatchObject({ permanent: true, message: 'Contact is not a member of the group' });
      const promoted = await refusal(f.groups.setRole(f.from, groupId, f.contacts[1], 'admin'));
      expect(promoted).toMatchObject({ permanent: true, message: 'Contact is not a member of the group' });
    });

    it("refuses a contact id outside the messenger's formats without repeating it", async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      const contactId = 'not a contact id 12345';
      const error = await refusal(f.groups.addMember(f.from, groupId, contactId));
      expect(error.permanent).toBe(true);
      expect(error.message).toMatch(new RegExp(`^Invalid contactId for ${f.messenger}: expected `));
      expect(error.message).not.toContain(contactId);
    });

    it("refuses a group that is not the bot's", async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      const other = f.messenger === 'signal' ? Buffer.alloc(32, 7).toString('base64') : f.messenger === 'simplex' ? '987654321' : `03${'ab'.repeat(32)}`;
      expect(other).not.toBe(groupId);
      expect(await refusal(f.groups.addMember(f.from, other, f.contacts[0]))).toMatchObject({ permanent: true, message: 'Group not found' });
      expect(await refusal(f.groups.members(f.from, other))).toMatchObject({ permanent: true, message: 'Group not found' });
    });

    it('gives the same invite link twice, or says the messenger has none', async () => {
      const groupId = await f.groups.createGroup(f.from, 'Contract group');
      if (!f.inviteLinks) {
        expect(await refusal(f.groups.inviteLink(f.from, groupId))).toMatchObject({ permanent: true, message: `${f.messenger[0]!.toUpperCase()}${f.messenger.slice(1)} groups have no invite links` });
        return;
      }
      const link = await f.groups.inviteLink(f.from, groupId);
      expect(link).toMatch(/^https:\/\//);
      expect(await f.groups.inviteLink(f.from, groupId)).toBe(link);
    });
  });
};
