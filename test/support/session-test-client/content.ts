/**
 * The Content a contact's app sends, per kind, as session-desktop v1.17.17 builds it in
 * ts/session/messages/outgoing/** (field numbers in ./schema.ts). "Disappearing" kinds carry
 * Content.expirationType (12) / expirationTimer (13) (ExpirableMessage.ts
 * makeDisappearingContentProto); the others do not (ContentMessage.ts
 * makeNonDisappearingContentProto). Every kind carries Content.sigTimestamp (15) in today's apps.
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import type { FormatLayout } from './formats.ts';
import type { ProtoObject } from './protobuf.ts';

export type ContentSpec =
  /** VisibleMessage.ts: DataMessage.body. */
  | { readonly kind: 'text' }
  /** TypingMessage.ts: TypingMessage{timestamp = sent time, action STARTED 0 | STOPPED 1}. */
  | { readonly kind: 'typing'; readonly action?: 'started' | 'stopped' }
  /** receipt/ReadReceiptMessage.ts: ReceiptMessage{type READ 1, timestamp[] (repeated, unpacked)}. */
  | { readonly kind: 'readReceipt'; readonly timestamps: readonly number[] }
  /** VisibleMessage.ts with `reaction`: DataMessage.reaction{id = reacted-to sent time, author, emoji, action}. */
  | { readonly kind: 'reaction'; readonly messageTimestamp: number; readonly author: string; readonly emoji?: string; readonly remove?: boolean }
  /** VisibleMessage.ts with attachments and no body; a voice note has AttachmentPointer.flags VOICE_MESSAGE 1 (models/conversation.ts). */
  | { readonly kind: 'attachment'; readonly voiceNote?: boolean; readonly contentType?: string; readonly fileName?: string }
  /** CallMessage.ts: CallMessage{type, sdps (required unless PRE_OFFER/END_CALL), uuid}. */
  | { readonly kind: 'call'; readonly type?: CallType; readonly uuid?: string }
  /** group_v2/to_user/GroupUpdateInviteMessage.ts: DataMessage.groupUpdateMessage.inviteMessage (memberAuthData 100 bytes, adminSignature 64). */
  | { readonly kind: 'groupInvite'; readonly groupSessionId?: string; readonly name?: string }
  /** DataExtractionNotificationMessage.ts: DataExtractionNotification{type, timestamp of the saved attachment's message}. */
  | { readonly kind: 'dataExtraction'; readonly type?: 'screenshot' | 'mediaSaved'; readonly timestamp?: number }
  /** UnsendMessage.ts: UnsendRequest{timestamp of the message to delete, author}. */
  | { readonly kind: 'unsend'; readonly messageTimestamp: number; readonly author: string }
  /** MessageRequestResponse.ts: MessageRequestResponse{isApproved true, profile}. */
  | { readonly kind: 'messageRequestResponse' };

export type ContentKind = ContentSpec['kind'];
export type CallType = 'preOffer' | 'offer' | 'answer' | 'provisionalAnswer' | 'iceCandidates' | 'endCall';

const CALL_TYPES: Record<CallType, number> = { offer: 1, answer: 2, provisionalAnswer: 3, iceCandidates: 4, endCall: 5, preOffer: 6 };

/** Content.ExpirationType: UNKNOWN 0 (also "off"), DELETE_AFTER_READ 1, DELETE_AFTER_SEND 2. */
export interface Disappearing {
  readonly type: 'deleteAfterRead' | 'deleteAfterSend' | 'unknown';
  readonly timerSeconds: number;
}
const EXPIRATION_TYPES = { unknown: 0, deleteAfterRead: 1, deleteAfterSend: 2 } as const;

export interface ContentOptions {
  readonly text: string;
  readonly sentAt: number;
  /** Content.sigTimestamp, or undefined to leave it out; 0 is written as 0. */
  readonly sigTimestamp: number | undefined;
  /** LokiProfile.displayName (DataMessage.profile / MessageRequestResponse.profile). */
  readonly displayName?: string;
  readonly disappearing?: Disappearing;
  readonly layout: FormatLayout;
}

/** Kinds that Desktop sends with the disappearing-message fields (ExpirableMessage subclasses). */
const DISAPPEARING: ReadonlySet<ContentKind> = new Set(['text', 'reaction', 'attachment', 'call', 'groupInvite', 'dataExtraction']);
/** Kinds whose DataMessage carries the sender's profile (…WithProfile subclasses). */
const WITH_PROFILE: ReadonlySet<ContentKind> = new Set(['text', 'reaction', 'attachment', 'groupInvite']);

export function buildContent(spec: ContentSpec, options: ContentOptions): ProtoObject {
  const { layout, sentAt } = options;
  // Desktop ≥ 1.16 (types/message/index.ts toProtobufDetails): displayName and lastProfileUpdateSeconds;
  // v1.14.5 wrote displayName (and profilePicture) only.
  const profile =
    options.displayName === undefined
      ? undefined
      : { displayName: options.displayName, lastProfileUpdateSeconds: layout.dataMessageTimestamp ? undefined : Math.floor(sentAt / 1000) };
  const dataMessage = (fields: ProtoObject): ProtoObject => ({
    ...fields,
    ...(layout.dataMessageTimestamp ? { timestamp: sentAt } : {}),
    ...(WITH_PROFILE.has(spec.kind) && profile ? { profile } : {}),
  });
  const content: ProtoObject = {};
  switch (spec.kind) {
    case 'text':
      content.dataMessage = dataMessage({ body: options.text });
      break;
    case 'typing':
      content.typingMessage = { timestamp: sentAt, action: spec.action === 'stopped' ? 1 : 0 };
      break;
    case 'readReceipt':
      content.receiptMessage = { type: 1, timestamp: [...spec.timestamps] };
      break;
    case 'reaction':
      content.dataMessage = dataMessage({ reaction: { id: spec.messageTimestamp, author: spec.author, emoji: spec.emoji ?? '👍', action: spec.remove ? 1 : 0 } });
      break;
    case 'attachment': {
      // The file server's id is the URL's last segment (utils/Attachments.ts attachmentIdAsLongFromUrl).
      const id = randomInt(1, 2 ** 47);
      content.dataMessage = dataMessage({
        attachments: [
          {
            deprecatedId: id,
            contentType: spec.contentType ?? (spec.voiceNote ? 'audio/mpeg' : 'image/jpeg'),
            key: randomBytes(64),
            size: 4096,
            digest: randomBytes(32),
            fileName: spec.fileName,
            flags: spec.voiceNote ? 1 : undefined,
            url: `http://filev2.getsession.org/file/${id}`,
          },
        ],
      });
      break;
    }
    case 'call': {
      const type = CALL_TYPES[spec.type ?? 'preOffer'];
      const sdps = type === CALL_TYPES.preOffer || type === CALL_TYPES.endCall ? undefined : ['v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\n'];
      content.callMessage = { type, sdps, uuid: spec.uuid ?? randomUUID() };
      break;
    }
    case 'groupInvite':
      content.dataMessage = dataMessage({
        groupUpdateMessage: {
          inviteMessage: {
            groupSessionId: spec.groupSessionId ?? `03${randomBytes(32).toString('hex')}`,
            name: spec.name ?? 'A group',
            memberAuthData: randomBytes(100),
            adminSignature: randomBytes(64),
          },
        },
      });
      break;
    case 'dataExtraction':
      content.dataExtractionNotification = { type: spec.type === 'screenshot' ? 1 : 2, timestamp: spec.timestamp ?? sentAt - 1_000 };
      break;
    case 'unsend':
      content.unsendRequest = { timestamp: spec.messageTimestamp, author: spec.author };
      break;
    case 'messageRequestResponse':
      content.messageRequestResponse = { isApproved: true, profile };
      break;
  }
  if (DISAPPEARING.has(spec.kind)) {
    const d = options.disappearing;
    if (d) {
      content.expirationType = EXPIRATION_TYPES[d.type];
      content.expirationTimer = d.timerSeconds;
    } else if (layout.disappearingOffWritten) {
      content.expirationType = 0;
      content.expirationTimer = 0;
    }
  }
  if (options.sigTimestamp !== undefined) content.sigTimestamp = options.sigTimestamp;
  return content;
}

/**
 * The storage TTL Desktop gives each kind (constants.ts TTL_DEFAULT; ExpirableMessage.ts
 * ttlForExpirationType: a delete-after-send timer is the TTL).
 */
export function defaultTtlMs(spec: ContentSpec, disappearing: Disappearing | undefined): number {
  if (spec.kind === 'typing') return 20_000;
  if (spec.kind === 'call') return 5 * 60_000;
  if (disappearing?.type === 'deleteAfterSend' && disappearing.timerSeconds > 0 && DISAPPEARING.has(spec.kind)) return disappearing.timerSeconds * 1000;
  return 14 * 24 * 3_600_000;
}

/** Which kind a received Content is (the first of its known payload fields). */
export function kindOf(content: ProtoObject): ContentKind | 'unknown' {
  const data = content.dataMessage as ProtoObject | undefined;
  if (data) {
    if (data.reaction) return 'reaction';
    if ((data.groupUpdateMessage as ProtoObject | undefined)?.inviteMessage) return 'groupInvite';
    if (data.body === undefined && (data.attachments as unknown[] | undefined)?.length) return 'attachment';
    return 'text';
  }
  if (content.typingMessage) return 'typing';
  if (content.receiptMessage) return 'readReceipt';
  if (content.callMessage) return 'call';
  if (content.dataExtractionNotification) return 'dataExtraction';
  if (content.unsendRequest) return 'unsend';
  if (content.messageRequestResponse) return 'messageRequestResponse';
  return 'unknown';
}
