/**
 * The messages the test client reads and writes: field numbers, types and proto2 rules, re-stated
 * (not copied) from
 *
 * - session-foundation/session-desktop v1.17.17 `protos/SignalService.proto` (Content and below;
 *   its copy of WebSocketRequestMessage/WebSocketMessage), and
 * - session-foundation/libsession-util `proto/SessionProtos.proto` and
 *   `proto/WebSocketResources.proto` (@015af4a7; the WebSocket file unchanged since 8762e9d) for the
 *   fields the Desktop proto reserves but libsession still writes or reads:
 *   Envelope.sourceDevice (7), Envelope.serverTimestamp (10), DataMessage.timestamp (7), and the
 *   request id's libsession name `requestId` (Desktop calls field 4 `id`).
 *
 * Types: uint64/uint32/int64/enum/bool are varints, fixed64 is 8 bytes little-endian,
 * string/bytes/messages are length-delimited. Only `required` and `repeated` are marked; the rest
 * is `optional`. ProMessage (Content 16) is kept as opaque bytes: its ProProof fields differ between
 * Desktop 1.17.17 and libsession @015af4a7 and nothing here needs them.
 */
export interface FieldSpec {
  readonly no: number;
  readonly name: string;
  readonly type: string;
  readonly rule?: 'required' | 'repeated';
}

type Row = readonly [no: number, name: string, type: string, rule?: 'required' | 'repeated'];
const R = 'required' as const;
const N = 'repeated' as const;
const table = (rows: readonly Row[]): FieldSpec[] => rows.map(([no, name, type, rule]) => ({ no, name, type, ...(rule ? { rule } : {}) }));

export const SCHEMA = {
  WebSocketMessage: table([
    [1, 'type', 'enum'], // UNKNOWN 0, REQUEST 1, RESPONSE 2
    [2, 'request', 'WebSocketRequestMessage'],
  ]),
  WebSocketRequestMessage: table([
    [1, 'verb', 'string'],
    [2, 'path', 'string'],
    [3, 'body', 'bytes'],
    [4, 'requestId', 'uint64'],
    [5, 'headers', 'string', N],
  ]),
  Envelope: table([
    [1, 'type', 'enum', R], // SESSION_MESSAGE 6, CLOSED_GROUP_MESSAGE 7
    [2, 'source', 'string'],
    [5, 'timestamp', 'uint64', R],
    [7, 'sourceDevice', 'uint32'], // libsession only (reserved in Desktop 1.17.17)
    [8, 'content', 'bytes'],
    [10, 'serverTimestamp', 'uint64'], // libsession only
    [11, 'proSig', 'bytes'],
  ]),
  Content: table([
    [1, 'dataMessage', 'DataMessage'],
    [3, 'callMessage', 'CallMessage'],
    [5, 'receiptMessage', 'ReceiptMessage'],
    [6, 'typingMessage', 'TypingMessage'],
    [8, 'dataExtractionNotification', 'DataExtractionNotification'],
    [9, 'unsendRequest', 'UnsendRequest'],
    [10, 'messageRequestResponse', 'MessageRequestResponse'],
    [12, 'expirationType', 'enum'], // UNKNOWN 0, DELETE_AFTER_READ 1, DELETE_AFTER_SEND 2
    [13, 'expirationTimer', 'uint32'], // seconds
    [15, 'sigTimestamp', 'uint64'],
    [16, 'proMessage', 'bytes'],
    [17, 'proSigForCommunityMessageOnly', 'bytes'],
  ]),
  TypingMessage: table([
    [1, 'timestamp', 'uint64', R],
    [2, 'action', 'enum', R], // STARTED 0, STOPPED 1
  ]),
  UnsendRequest: table([
    [1, 'timestamp', 'uint64', R],
    [2, 'author', 'string', R],
  ]),
  MessageRequestResponse: table([
    [1, 'isApproved', 'bool', R],
    [2, 'profileKey', 'bytes'],
    [3, 'profile', 'LokiProfile'],
  ]),
  CallMessage: table([
    [1, 'type', 'enum', R], // PRE_OFFER 6, OFFER 1, ANSWER 2, PROVISIONAL_ANSWER 3, ICE_CANDIDATES 4, END_CALL 5
    [2, 'sdps', 'string', N],
    [3, 'sdpMLineIndexes', 'uint32', N],
    [4, 'sdpMids', 'string', N],
    [5, 'uuid', 'string', R],
  ]),
  DataExtractionNotification: table([
    [1, 'type', 'enum', R], // SCREENSHOT 1, MEDIA_SAVED 2
    [2, 'timestamp', 'uint64'],
  ]),
  LokiProfile: table([
    [1, 'displayName', 'string'],
    [2, 'profilePicture', 'string'],
    [3, 'lastProfileUpdateSeconds', 'uint64'],
  ]),
  DataMessage: table([
    [1, 'body', 'string'],
    [2, 'attachments', 'AttachmentPointer', N],
    [4, 'flags', 'uint32'], // EXPIRATION_TIMER_UPDATE 2
    [6, 'profileKey', 'bytes'],
    [7, 'timestamp', 'uint64'], // legacy clients only (reserved in Desktop 1.17.17)
    [8, 'quote', 'Quote'],
    [10, 'preview', 'Preview', N],
    [11, 'reaction', 'Reaction'],
    [101, 'profile', 'LokiProfile'],
    [102, 'communityInvitation', 'CommunityInvitation'],
    [105, 'syncTarget', 'string'],
    [106, 'blocksCommunityMessageRequests', 'bool'],
    [120, 'groupUpdateMessage', 'GroupUpdateMessage'],
  ]),
  Quote: table([
    [1, 'id', 'uint64', R],
    [2, 'author', 'string', R],
  ]),
  Preview: table([
    [1, 'url', 'string', R],
    [2, 'title', 'string'],
    [3, 'image', 'AttachmentPointer'],
  ]),
  Reaction: table([
    [1, 'id', 'uint64', R], // the reacted-to message's timestamp
    [2, 'author', 'string', R],
    [3, 'emoji', 'string'],
    [4, 'action', 'enum', R], // REACT 0, REMOVE 1
  ]),
  CommunityInvitation: table([
    [1, 'url', 'string', R],
    [3, 'name', 'string', R],
  ]),
  ReceiptMessage: table([
    [1, 'type', 'enum', R], // READ 1
    [2, 'timestamp', 'uint64', N],
  ]),
  AttachmentPointer: table([
    [1, 'deprecatedId', 'fixed64', R],
    [2, 'contentType', 'string'],
    [3, 'key', 'bytes'],
    [4, 'size', 'uint32'],
    [6, 'digest', 'bytes'],
    [7, 'fileName', 'string'],
    [8, 'flags', 'uint32'], // VOICE_MESSAGE 1
    [9, 'width', 'uint32'],
    [10, 'height', 'uint32'],
    [11, 'caption', 'string'],
    [101, 'url', 'string'],
  ]),
  GroupUpdateMessage: table([
    [1, 'inviteMessage', 'GroupUpdateInviteMessage'],
    [2, 'infoChangeMessage', 'GroupUpdateInfoChangeMessage'],
    [3, 'memberChangeMessage', 'GroupUpdateMemberChangeMessage'],
    [4, 'promoteMessage', 'GroupUpdatePromoteMessage'],
    [5, 'memberLeftMessage', 'GroupUpdateEmpty'],
    [6, 'inviteResponse', 'GroupUpdateInviteResponseMessage'],
    [7, 'deleteMemberContent', 'GroupUpdateDeleteMemberContentMessage'],
    [8, 'memberLeftNotificationMessage', 'GroupUpdateEmpty'],
  ]),
  GroupUpdateInviteMessage: table([
    [1, 'groupSessionId', 'string', R], // "03" + the group's Ed25519 key in hex
    [2, 'name', 'string', R],
    [3, 'memberAuthData', 'bytes', R],
    [4, 'adminSignature', 'bytes', R],
  ]),
  GroupUpdateInfoChangeMessage: table([
    [1, 'type', 'enum', R],
    [2, 'updatedName', 'string'],
    [3, 'updatedExpiration', 'uint32'],
    [4, 'adminSignature', 'bytes', R],
  ]),
  GroupUpdateMemberChangeMessage: table([
    [1, 'type', 'enum', R],
    [2, 'memberSessionIds', 'string', N],
    [3, 'historyShared', 'bool'],
    [4, 'adminSignature', 'bytes', R],
  ]),
  GroupUpdatePromoteMessage: table([
    [1, 'groupIdentitySeed', 'bytes', R],
    [2, 'name', 'string', R],
  ]),
  GroupUpdateEmpty: table([]), // GroupUpdateMemberLeftMessage and …NotificationMessage have no fields
  GroupUpdateInviteResponseMessage: table([[1, 'isApproved', 'bool', R]]),
  GroupUpdateDeleteMemberContentMessage: table([
    [1, 'memberSessionIds', 'string', N],
    [2, 'messageHashes', 'string', N],
    [3, 'adminSignature', 'bytes'],
  ]),
} satisfies Record<string, FieldSpec[]>;

export type MessageName = keyof typeof SCHEMA;
