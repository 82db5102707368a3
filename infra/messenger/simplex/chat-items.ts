/**
 * simplex-chat's `newChatItems` event as inbound messages: received text items (`rcvMsgContent`
 * with text) from a contact (`chatInfo.type` direct) or in a group (sender in
 * `chatDir.groupRcv.groupMember`). The bot's own items, system items and items without text are
 * not messages.
 */
import { z } from 'zod';

const id = z.number().int().nonnegative();
const chatItem = z.object({
  chatInfo: z.object({
    type: z.string(),
    contact: z.object({ contactId: id }).passthrough().optional(),
    groupInfo: z.object({ groupId: id }).passthrough().optional(),
  }),
  chatItem: z.object({
    chatDir: z.object({
      type: z.string(),
      groupMember: z.object({ groupMemberId: id, memberContactId: id.nullish() }).passthrough().optional(),
    }),
    meta: z.object({ itemId: id, itemTs: z.string().optional() }).passthrough(),
    content: z.object({ type: z.string(), msgContent: z.object({ type: z.string(), text: z.string().optional() }).passthrough().optional() }).passthrough(),
  }),
});
const newChatItems = z.object({ user: z.object({ userId: id }).passthrough(), chatItems: z.array(z.unknown()) });

/** The prefix of a group member's contactId when the bot has no direct contact for them. */
export const MEMBER_PREFIX = 'member-';

/** A group member as a contactId: their contact id when the bot has one, else `member-<groupMemberId>`. */
export const memberContactIdOf = (member: { groupMemberId: number; memberContactId?: number | null | undefined }): string =>
  member.memberContactId !== undefined && member.memberContactId !== null ? String(member.memberContactId) : `${MEMBER_PREFIX}${member.groupMemberId}`;

export interface ReceivedItem {
  readonly userId: number;
  /**
   * The sender: the contact's id, or in a group the member's contact id when the bot has one, else
   * `member-<groupMemberId>` (simplex-chat's contact and group member ids come from separate tables
   * and can be equal: the prefix keeps the kinds apart).
   */
  readonly contactId: string;
  readonly groupId?: string;
  readonly text: string;
  readonly timestamp?: number;
  /** The item's id in simplex-chat's database: a redelivered item keeps it. */
  readonly itemId: number;
}

export type ItemsReading = { readonly received: ReceivedItem[]; readonly malformed: number };

export const readNewChatItems = (event: unknown): ItemsReading => {
  const parsed = newChatItems.safeParse(event);
  if (!parsed.success) return { received: [], malformed: 1 };
  const received: ReceivedItem[] = [];
  let malformed = 0;
  for (const raw of parsed.data.chatItems) {
    const item = chatItem.safeParse(raw);
    if (!item.success) {
      malformed++;
      continue;
    }
    const { chatInfo, chatItem: ci } = item.data;
    if (ci.content.type !== 'rcvMsgContent' || typeof ci.content.msgContent?.text !== 'string' || ci.content.msgContent.text === '') continue;
    const timestamp = ci.meta.itemTs ? Date.parse(ci.meta.itemTs) : NaN;
    const common = { userId: parsed.data.user.userId, text: ci.content.msgContent.text, itemId: ci.meta.itemId, ...(Number.isFinite(timestamp) ? { timestamp } : {}) };
    if (chatInfo.type === 'direct' && ci.chatDir.type === 'directRcv' && chatInfo.contact) {
      received.push({ ...common, contactId: String(chatInfo.contact.contactId) });
    } else if (chatInfo.type === 'group' && ci.chatDir.type === 'groupRcv' && chatInfo.groupInfo && ci.chatDir.groupMember) {
      const member = ci.chatDir.groupMember;
      received.push({ ...common, contactId: memberContactIdOf(member), groupId: String(chatInfo.groupInfo.groupId) });
    }
  }
  return { received, malformed };
};
