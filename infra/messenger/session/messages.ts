import { ProtobufError, ProtoWriter, readFields, safeNumber, type ProtoField } from './protobuf.ts';

/**
 * The protobuf messages of Session's one-to-one messages, reduced to the fields Relay reads or
 * writes. Field numbers are protocol facts (session-desktop 1.17.17 `protos/SignalService.proto`;
 * ../shared/notes/session-protocol.md §5, §14); this is a fresh minimal description, not the apps'
 * .proto file.
 *
 *   WebSocketMessage        { type = 1 (enum: REQUEST 1), request = 2 }
 *   WebSocketRequestMessage { verb = 1, path = 2, body = 3, id = 4 }
 *   Envelope                { type = 1 (SESSION_MESSAGE 6), source = 2, timestamp = 5, sourceDevice = 7, content = 8, proSig = 11 }
 *   Content                 { dataMessage = 1, callMessage = 3, receiptMessage = 5, typingMessage = 6,
 *                             dataExtractionNotification = 8, unsendRequest = 9, messageRequestResponse = 10,
 *                             expirationType = 12, expirationTimer = 13, sigTimestamp = 15 }
 *   DataMessage             { body = 1, attachments = 2, flags = 4, timestamp = 7 (legacy), quote = 8, reaction = 11,
 *                             profile = 101, communityInvitation = 102, syncTarget = 105, groupUpdateMessage = 120 }
 *   AttachmentPointer       { flags = 8 (VOICE_MESSAGE 1) }
 *   LokiProfile             { displayName = 1, lastProfileUpdateSeconds = 3 }
 *   GroupUpdateMessage      { inviteMessage = 1, … }
 */

export const WEBSOCKET_REQUEST = 1;
export const ENVELOPE_SESSION_MESSAGE = 6;
/** What Session Desktop up to 1.17.2 and session.js put in the WebSocket request; libsession and the current apps send empty strings. */
export const MESSAGE_VERB = 'PUT';
export const MESSAGE_PATH = '/api/v1/message';
/** `DataMessage.flags`: the message only changes the conversation's disappearing-messages setting. */
export const FLAG_EXPIRATION_TIMER_UPDATE = 2;
const ATTACHMENT_VOICE_MESSAGE = 1;

/** `Content.expirationType`: 0 unknown (off), 1 delete after read, 2 delete after send. */
export type ExpirationType = 0 | 1 | 2;

export interface DataMessage {
  readonly body?: string;
  readonly timestamp?: number;
  readonly displayName?: string;
  /** `LokiProfile.lastProfileUpdateSeconds`: clients keep the newest profile they were sent. */
  readonly profileUpdatedSeconds?: number;
  /** Set on the copy a client stores in its own inbox ("sync message"): the conversation's Session ID. */
  readonly syncTarget?: string;
  readonly flags?: number;
  /** Read only: how many attachments, and whether one is a voice note. */
  readonly attachments?: number;
  readonly voiceNote?: boolean;
  readonly reaction?: boolean;
  readonly communityInvitation?: boolean;
  /** Read only: which group update it carries (`invite`, or `other`). */
  readonly groupUpdate?: 'invite' | 'other';
}

/** The Content fields Relay does not open, by what they are. */
export type OtherContent = 'call' | 'read-receipt' | 'typing' | 'data-extraction' | 'unsend';

export interface Content {
  readonly dataMessage?: DataMessage;
  /** True when the content carries a MessageRequestResponse (accepting a message request). */
  readonly messageRequestResponse?: boolean;
  readonly expirationType?: number;
  /** Seconds. */
  readonly expirationTimer?: number;
  readonly sigTimestamp?: number;
  /** Read only: the other kinds of content present. */
  readonly others?: readonly OtherContent[];
}

export interface Envelope {
  readonly type: number;
  readonly source?: string;
  readonly timestamp: number;
  readonly content: Buffer;
  /** libsession sends 1. */
  readonly sourceDevice?: number;
  /** 64 bytes: a Session Pro signature, random bytes for users without Pro (libsession). */
  readonly proSig?: Buffer;
}

export interface WebSocketRequest {
  readonly verb: string;
  readonly path: string;
  readonly body: Buffer;
  readonly id: bigint;
}

export function encodeContent(content: Content): Buffer {
  const writer = new ProtoWriter();
  if (content.dataMessage) writer.bytes(1, encodeDataMessage(content.dataMessage));
  if (content.messageRequestResponse) writer.bytes(10, new ProtoWriter().varint(1, 1).finish());
  if (content.expirationType !== undefined) writer.varint(12, content.expirationType);
  if (content.expirationTimer !== undefined) writer.varint(13, content.expirationTimer);
  if (content.sigTimestamp !== undefined) writer.varint(15, content.sigTimestamp);
  return writer.finish();
}

function encodeDataMessage(message: DataMessage): Buffer {
  const writer = new ProtoWriter();
  if (message.body !== undefined) writer.string(1, message.body);
  if (message.flags !== undefined) writer.varint(4, message.flags);
  if (message.timestamp !== undefined) writer.varint(7, message.timestamp);
  if (message.displayName !== undefined) {
    const profile = new ProtoWriter().string(1, message.displayName);
    if (message.profileUpdatedSeconds !== undefined) profile.varint(3, message.profileUpdatedSeconds);
    writer.bytes(101, profile.finish());
  }
  if (message.syncTarget !== undefined) writer.string(105, message.syncTarget);
  return writer.finish();
}

const OTHER_CONTENT_FIELDS: ReadonlyMap<number, OtherContent> = new Map([
  [3, 'call'],
  [5, 'read-receipt'],
  [6, 'typing'],
  [8, 'data-extraction'],
  [9, 'unsend'],
]);

export function decodeContent(bytes: Buffer): Content {
  let dataMessage: DataMessage | undefined;
  let messageRequestResponse = false;
  let sigTimestamp: number | undefined;
  let expirationType: number | undefined;
  let expirationTimer: number | undefined;
  const others: OtherContent[] = [];
  for (const field of readFields(bytes)) {
    const control = OTHER_CONTENT_FIELDS.get(field.field);
    if (field.field === 1) dataMessage = decodeDataMessage(lengthDelimited(field, 'Content.dataMessage'));
    else if (control !== undefined) {
      lengthDelimited(field, `Content.${control}`);
      if (!others.includes(control)) others.push(control);
    } else if (field.field === 10) {
      lengthDelimited(field, 'Content.messageRequestResponse');
      messageRequestResponse = true;
    } else if (field.field === 12) expirationType = safeNumber(varint(field, 'Content.expirationType'), 'Content.expirationType');
    else if (field.field === 13) expirationTimer = safeNumber(varint(field, 'Content.expirationTimer'), 'Content.expirationTimer');
    else if (field.field === 15) sigTimestamp = safeNumber(varint(field, 'Content.sigTimestamp'), 'Content.sigTimestamp');
  }
  return {
    ...(dataMessage ? { dataMessage } : {}),
    ...(messageRequestResponse ? { messageRequestResponse } : {}),
    ...(expirationType !== undefined ? { expirationType } : {}),
    ...(expirationTimer !== undefined ? { expirationTimer } : {}),
    ...(sigTimestamp !== undefined ? { sigTimestamp } : {}),
    ...(others.length > 0 ? { others } : {}),
  };
}

function decodeDataMessage(bytes: Buffer): DataMessage {
  let body: string | undefined;
  let timestamp: number | undefined;
  let displayName: string | undefined;
  let syncTarget: string | undefined;
  let flags: number | undefined;
  let attachments = 0;
  let voiceNote = false;
  let reaction = false;
  let communityInvitation = false;
  let groupUpdate: 'invite' | 'other' | undefined;
  for (const field of readFields(bytes)) {
    switch (field.field) {
      case 1:
        body = utf8(lengthDelimited(field, 'DataMessage.body'));
        break;
      case 2:
        attachments++;
        for (const inner of readFields(lengthDelimited(field, 'DataMessage.attachments'))) {
          if (inner.field === 8 && (varint(inner, 'AttachmentPointer.flags') & BigInt(ATTACHMENT_VOICE_MESSAGE)) !== 0n) voiceNote = true;
        }
        break;
      case 4:
        flags = safeNumber(varint(field, 'DataMessage.flags'), 'DataMessage.flags');
        break;
      case 7:
        timestamp = safeNumber(varint(field, 'DataMessage.timestamp'), 'DataMessage.timestamp');
        break;
      case 11:
        lengthDelimited(field, 'DataMessage.reaction');
        reaction = true;
        break;
      case 101:
        for (const inner of readFields(lengthDelimited(field, 'DataMessage.profile'))) {
          if (inner.field === 1) displayName = utf8(lengthDelimited(inner, 'LokiProfile.displayName'));
        }
        break;
      case 102:
        lengthDelimited(field, 'DataMessage.communityInvitation');
        communityInvitation = true;
        break;
      case 105:
        syncTarget = utf8(lengthDelimited(field, 'DataMessage.syncTarget'));
        break;
      case 120: {
        let invite = false;
        for (const inner of readFields(lengthDelimited(field, 'DataMessage.groupUpdateMessage'))) if (inner.field === 1) invite = true;
        groupUpdate = invite ? 'invite' : 'other';
        break;
      }
    }
  }
  return {
    ...(body !== undefined ? { body } : {}),
    ...(timestamp !== undefined ? { timestamp } : {}),
    ...(displayName !== undefined ? { displayName } : {}),
    ...(syncTarget !== undefined ? { syncTarget } : {}),
    ...(flags !== undefined ? { flags } : {}),
    ...(attachments > 0 ? { attachments } : {}),
    ...(voiceNote ? { voiceNote } : {}),
    ...(reaction ? { reaction } : {}),
    ...(communityInvitation ? { communityInvitation } : {}),
    ...(groupUpdate !== undefined ? { groupUpdate } : {}),
  };
}

export function encodeEnvelope(envelope: Envelope): Buffer {
  const writer = new ProtoWriter().varint(1, envelope.type);
  if (envelope.source !== undefined) writer.string(2, envelope.source);
  writer.varint(5, envelope.timestamp);
  if (envelope.sourceDevice !== undefined) writer.varint(7, envelope.sourceDevice);
  writer.bytes(8, envelope.content);
  if (envelope.proSig !== undefined) writer.bytes(11, envelope.proSig);
  return writer.finish();
}

export function decodeEnvelope(bytes: Buffer): Envelope {
  let type: number | undefined;
  let source: string | undefined;
  let timestamp: number | undefined;
  let content: Buffer | undefined;
  let sourceDevice: number | undefined;
  let proSig: Buffer | undefined;
  for (const field of readFields(bytes)) {
    if (field.field === 1) type = safeNumber(varint(field, 'Envelope.type'), 'Envelope.type');
    else if (field.field === 2) source = utf8(lengthDelimited(field, 'Envelope.source'));
    else if (field.field === 5) timestamp = safeNumber(varint(field, 'Envelope.timestamp'), 'Envelope.timestamp');
    else if (field.field === 7) sourceDevice = safeNumber(varint(field, 'Envelope.sourceDevice'), 'Envelope.sourceDevice');
    else if (field.field === 8) content = lengthDelimited(field, 'Envelope.content');
    else if (field.field === 11) proSig = lengthDelimited(field, 'Envelope.proSig');
  }
  if (type === undefined) throw new ProtobufError('Envelope.type is missing');
  if (timestamp === undefined) throw new ProtobufError('Envelope.timestamp is missing');
  return {
    type,
    ...(source !== undefined ? { source } : {}),
    timestamp,
    content: content ?? Buffer.alloc(0),
    ...(sourceDevice !== undefined ? { sourceDevice } : {}),
    ...(proSig !== undefined ? { proSig } : {}),
  };
}

/** WebSocketMessage{ type: REQUEST, request: { verb: PUT, path: /api/v1/message, body, id: 0 } }. */
export function wrapInWebSocketRequest(envelope: Buffer): Buffer {
  const request = new ProtoWriter().string(1, MESSAGE_VERB).string(2, MESSAGE_PATH).bytes(3, envelope).varint(4, 0).finish();
  return new ProtoWriter().varint(1, WEBSOCKET_REQUEST).bytes(2, request).finish();
}

/**
 * The request a WebSocketMessage carries, whatever its verb and path (every current receiver reads
 * only `request.body`: libsession `decode_envelope`, Android `MessageWrapper.kt`, iOS `unwrap`);
 * throws when it carries none, or is typed as something other than a request.
 */
export function unwrapWebSocketRequest(bytes: Buffer): WebSocketRequest {
  let type: bigint | undefined;
  let request: Buffer | undefined;
  for (const field of readFields(bytes)) {
    if (field.field === 1) type = varint(field, 'WebSocketMessage.type');
    else if (field.field === 2) request = lengthDelimited(field, 'WebSocketMessage.request');
  }
  if ((type !== undefined && type !== BigInt(WEBSOCKET_REQUEST)) || !request) throw new ProtobufError('not a WebSocket request message');
  let verb = '';
  let path = '';
  let body: Buffer | undefined;
  let id = 0n;
  for (const field of readFields(request)) {
    if (field.field === 1) verb = utf8(lengthDelimited(field, 'WebSocketRequestMessage.verb'));
    else if (field.field === 2) path = utf8(lengthDelimited(field, 'WebSocketRequestMessage.path'));
    else if (field.field === 3) body = lengthDelimited(field, 'WebSocketRequestMessage.body');
    else if (field.field === 4) id = varint(field, 'WebSocketRequestMessage.id');
  }
  if (!body || body.byteLength === 0) throw new ProtobufError('the WebSocket request has no body');
  return { verb, path, body, id };
}

function lengthDelimited(field: ProtoField, what: string): Buffer {
  if (field.wireType !== 2) throw new ProtobufError(`${what} has the wrong wire type`);
  return field.value;
}

function varint(field: ProtoField, what: string): bigint {
  if (field.wireType !== 0) throw new ProtobufError(`${what} has the wrong wire type`);
  return field.value;
}

const decoder = new TextDecoder('utf-8', { fatal: true });

function utf8(bytes: Buffer): string {
  try {
    return decoder.decode(bytes);
  } catch {
    throw new ProtobufError('a string field is not UTF-8');
  }
}
