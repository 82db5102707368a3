/**
 * Signal groups beyond the group contract, on the fake signal-cli (HTTP): the daemon's refusals
 * become fixed reasons that never repeat a number or a group id, a lost account is an outage (the
 * request waits) rather than a refusal, and invited members show as such.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { FakeSignalCli } from '../../../test/support/fake-signal-cli.ts';
import { BOT, signalFixture } from '../../../test/support/signal-fixture.ts';
import { UnavailableError } from '../../errors/unavailable.ts';
import { GroupOperationError, type GroupAdministration } from '../port.ts';

const ALICE = '+15550100001';
const refusal = (operation: Promise<unknown>) =>
  operation.then(
    () => undefined,
    (e: unknown) => e,
  );

describe('Signal groups (fake signal-cli)', () => {
  let fake: FakeSignalCli;
  let groups: GroupAdministration;
  let teardown: () => Promise<void>;
  let groupId: string;

  beforeEach(async () => {
    const fixture = await signalFixture('http');
    fake = fixture.fake;
    groups = fixture.connector.groups!;
    teardown = fixture.teardown;
    groupId = await groups.createGroup(BOT, 'Support bot');
  });
  afterEach(() => teardown());

  it('makes the group on the daemon with the app name, the bot its admin', () => {
    expect(groupId).toMatch(/^[A-Za-z0-9+/]{43}=$/);
    expect(fake.groups.group(groupId)).toMatchObject({ name: 'Support bot', account: BOT });
    expect(fake.groups.group(groupId)?.admins.has(BOT)).toBe(true);
  });

  it('refuses an unregistered contact without naming them', async () => {
    fake.groups.markUnregistered(ALICE);
    const error = await refusal(groups.addMember(BOT, groupId, ALICE));
    expect(error).toEqual(new GroupOperationError('The contact is not registered on Signal'));
    expect((error as Error).message).not.toContain(ALICE);
  });

  it('says the bot is not an admin when the group server refuses its change', async () => {
    await groups.addMember(BOT, groupId, ALICE);
    fake.groups.revokeAdmin(groupId);
    expect(await refusal(groups.setRole(BOT, groupId, ALICE, 'admin'))).toEqual(new GroupOperationError('The bot is not an admin of the group'));
  });

  it('answers a group the daemon does not know as not found, without its id', async () => {
    const other = Buffer.alloc(32, 1).toString('base64');
    const error = await refusal(groups.addMember(BOT, other, ALICE));
    expect(error).toEqual(new GroupOperationError('Group not found'));
    expect((error as Error).message).not.toContain(other);
  });

  it("treats the bot's account gone from the daemon as an outage, not a refusal", async () => {
    fake.removeAccount(BOT);
    const error = await refusal(groups.members(BOT, groupId));
    expect(error).toBeInstanceOf(UnavailableError);
  });

  it("a refusal for now (Signal's servers unreachable) may be tried again", async () => {
    fake.failNextCall(-3, 'Failed to send message: timeout');
    expect(await refusal(groups.addMember(BOT, groupId, ALICE))).toMatchObject({ permanent: false, message: 'Signal could not make the group change now (-3)' });
  });

  it('lists invited members as invited, and members who hide their number by their ACI', async () => {
    const hidden = '0f3b2c1d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    fake.groups.group(groupId)!.pending.add('+15550100002');
    fake.groups.join(groupId, hidden);
    expect(await groups.members(BOT, groupId)).toEqual([
      { contactId: hidden, role: 'member', status: 'joined' },
      { contactId: '+15550100002', role: 'member', status: 'invited' },
    ]);
  });
});
