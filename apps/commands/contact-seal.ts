import { userStreamName } from '../../domain/user/decider.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { KeyChanges, KeyVault } from '../../infra/event-store/port.ts';

/**
 * The data key of a messenger contact linked to a user: it seals the contact id on the user's
 * stream, lives as long as the link (no expiry, every use) and is destroyed with the
 * `MessengerContactUnlinked` event, after which the contact id opens for nobody (docs/privacy.md).
 */
export interface ContactKey {
  readonly id: string;
  readonly raw: Buffer;
  /** Put it with the `MessengerContactLinked` event. */
  readonly changes: KeyChanges;
}

const NEVER = new Date('9999-12-31T00:00:00.000Z');
const ALL_USES = 2 ** 31 - 1;

const bound = (userId: string, contactLinkId: string) => `${userStreamName(userId)}/contact-${contactLinkId}`;

export const newContactKey = (sealer: MessageSealer, userId: string, contactLinkId: string): ContactKey => {
  const key = sealer.newKey();
  return { id: key.id, raw: key.raw, changes: { put: [{ id: key.id, scope: userId, subject: bound(userId, contactLinkId), wrapped: key.wrapped, uses: ALL_USES, expiresAt: NEVER }] } };
};

export const sealContact = (sealer: MessageSealer, raw: Buffer, userId: string, contactLinkId: string, contactId: string): string => sealer.seal(raw, bound(userId, contactLinkId), [contactId]);

/** The contact id of a link, or undefined when its key is gone (unlinked meanwhile). */
export const openContact = async (
  keys: KeyVault,
  sealer: MessageSealer,
  link: { readonly userId: string; readonly contactLinkId: string; readonly keyId: string; readonly sealedContact: string },
): Promise<string | undefined> => {
  const wrapped = (await keys.get([link.keyId], new Date())).get(link.keyId);
  if (wrapped === undefined) return undefined;
  const opened = sealer.open(sealer.unwrap(wrapped), bound(link.userId, link.contactLinkId), link.sealedContact);
  const contactId = opened.format === 'strings' ? opened.strings[0] : undefined;
  if (typeof contactId !== 'string') throw new Error('A sealed contact holds no string');
  return contactId;
};
