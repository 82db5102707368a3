import { createHmac } from 'node:crypto';
import { groupStreamName, type GroupState } from '../../domain/group/decider.ts';
import type { SealedMember } from '../../domain/group/events.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { KeyChanges, KeyVault } from '../../infra/event-store/port.ts';
import type { GroupMember, GroupRole } from '../../infra/messenger/port.ts';

/**
 * The data key of an app-messenger's group: it seals the contact ids, the group id, the invite
 * link and the member lists of the `group-<appMessengerId>` stream. Unlike a message's key it
 * lives as long as the app (the group outlives any message), so it has no expiry and every use
 * it could need; deleting the app retires it with the app's other keys and the body shredder
 * destroys it (docs/privacy.md).
 */
export interface GroupKey {
  readonly id: string;
  readonly raw: Buffer;
  /** Given for a new key: put it with the stream's first event. */
  readonly changes: KeyChanges;
}

/** What a sealed group field is: bound into the sealed payload, so one does not open as another. */
export type GroupField = 'contact' | 'group' | 'link' | 'members' | 'member';

const NEVER = new Date('9999-12-31T00:00:00.000Z');
const ALL_USES = 2 ** 31 - 1;

export class GroupKeyGoneError extends Error {
  override readonly name = 'GroupKeyGoneError';
}

export const groupKeyOf = async (keys: KeyVault, sealer: MessageSealer, state: GroupState, appId: string, appMessengerId: string): Promise<GroupKey> => {
  if (state.keyId === null) {
    const key = sealer.newKey();
    return {
      id: key.id,
      raw: key.raw,
      changes: { put: [{ id: key.id, scope: appId, subject: groupStreamName(appMessengerId), wrapped: key.wrapped, uses: ALL_USES, expiresAt: NEVER }] },
    };
  }
  return { id: state.keyId, raw: await openGroupKey(keys, sealer, state.keyId), changes: { require: [state.keyId] } };
};

export const openGroupKey = async (keys: KeyVault, sealer: MessageSealer, keyId: string): Promise<Buffer> => unwrapGroupKey(sealer, keyId, (await keys.get([keyId], new Date())).get(keyId));

/** A group's key from its wrapped form as the key vault returned it (undefined: the vault no longer holds it). */
export const unwrapGroupKey = (sealer: MessageSealer, keyId: string, wrapped: string | undefined): Buffer => {
  if (wrapped === undefined) throw new GroupKeyGoneError(`The data key of a group is gone (${keyId})`);
  return sealer.unwrap(wrapped);
};

const bound = (appMessengerId: string, field: GroupField) => `${groupStreamName(appMessengerId)}/${field}`;

export const sealGroupField = (sealer: MessageSealer, raw: Buffer, appMessengerId: string, field: Exclude<GroupField, 'members' | 'member'>, value: string): string =>
  sealer.seal(raw, bound(appMessengerId, field), [value]);

export const openGroupField = (sealer: MessageSealer, raw: Buffer, appMessengerId: string, field: Exclude<GroupField, 'members' | 'member'>, sealed: string): string => {
  const opened = sealer.open(raw, bound(appMessengerId, field), sealed);
  const value = opened.format === 'strings' ? opened.strings[0] : undefined;
  if (typeof value !== 'string') throw new Error(`A sealed group ${field} holds no string`);
  return value;
};

/** Members in a stable order (by contact id), so that equal lists seal to equal digests. */
const ordered = (members: readonly GroupMember[]) => [...members].sort((a, b) => (a.contactId < b.contactId ? -1 : a.contactId > b.contactId ? 1 : 0));

/** A keyed hash under the group's key, for one purpose. */
const keyed = (raw: Buffer, purpose: string, value: string) => createHmac('sha256', raw).update(`${purpose}\u0000${value}`).digest('base64url').slice(0, 22);

/** Each member sealed on its own, with a ref and a digest a list can be compared by without opening it (domain/group/events.ts). */
export const sealMemberList = (sealer: MessageSealer, raw: Buffer, appMessengerId: string, members: readonly GroupMember[]): SealedMember[] =>
  ordered(members).map((m) => ({
    memberRef: keyed(raw, 'member-ref', m.contactId),
    memberDigest: keyed(raw, 'member-digest', `${m.contactId}\u0000${m.role}\u0000${m.status}`),
    sealed: sealer.seal(raw, bound(appMessengerId, 'member'), [m.contactId, m.role, m.status]),
  }));

/** Opens members sealed one by one, in a stable order (by contact id). */
export const openMemberList = (sealer: MessageSealer, raw: Buffer, appMessengerId: string, sealed: readonly string[]): GroupMember[] =>
  ordered(
    sealed.map((one) => {
      const opened = sealer.open(raw, bound(appMessengerId, 'member'), one);
      if (opened.format !== 'strings' || opened.strings.length !== 3) throw new Error('A sealed member is not one');
      const [contactId, role, status] = opened.strings as [string, string, string];
      return { contactId, role: role as GroupRole, status: status === 'invited' ? 'invited' : 'joined' } satisfies GroupMember;
    }),
  );

/** Opens a member list sealed as one (written before issue 23). */
export const openMembers = (sealer: MessageSealer, raw: Buffer, appMessengerId: string, sealed: string): GroupMember[] => {
  const opened = sealer.open(raw, bound(appMessengerId, 'members'), sealed);
  if (opened.format !== 'strings' || opened.strings.length % 3 !== 0) throw new Error('A sealed member list is not one');
  const members: GroupMember[] = [];
  for (let i = 0; i < opened.strings.length; i += 3) {
    const [contactId, role, status] = opened.strings.slice(i, i + 3);
    members.push({ contactId: contactId!, role: role as GroupRole, status: status === 'invited' ? 'invited' : 'joined' });
  }
  return members;
};

/** A digest of the list keyed with the group's key: equal lists give equal digests, and once the key is destroyed it tells nothing. */
export const membersDigest = (raw: Buffer, members: readonly GroupMember[]): string => {
  const hmac = createHmac('sha256', raw);
  for (const m of ordered(members)) hmac.update(`${m.contactId}\u0000${m.role}\u0000${m.status}\u0000`);
  return hmac.digest('base64url');
};
