import { ProtobufError, ProtoWriter, readFields, safeNumber, type ProtoField } from './protobuf.ts';

/**
 * The protobuf messages of Session's one-to-one text, reduced to the fields Relay reads or writes.
 * Field numbers are protocol facts (docs in ../shared/notes/session-protocol.md §5); this is a fresh
 * minimal description, not the apps' .proto file.
 *
 *   WebSocketMessage        { type = 1 (enum: REQUEST 1), request = 2 }
 *   WebSocketRequestMessage { verb = 1, path = 2, body = 3, id = 4 }
 *   Envelope                { type = 1 (enum: SESSION_MESSAGE 6), source = 2, timestamp = 5, content = 8 }
 *   Content                 { dataMessage = 1, messageRequestResponse = 10, sigTimestamp = 15 }
 *   DataMessage             { body = 1, timestamp = 7, profile = 101, syncTarget = 105 }
 *   LokiProfile             { displayName = 1 }
 *   MessageRequestResponse  { isApproved = 1 }
 */

export const WEBSOCKET_REQUEST = 1;
export const ENVELOPE_SESSION_MESSAGE = 6;
export const MESSAGE_VERB = 'PUT';
export const MESSAGE_PATH = '/api/v1/message';

export interface DataMessage {
  readonly body?: string;
  readonly timestamp?: number;
  readonly displayName?: string;
  /** Set on the copy a client stores in its own inbox ("sync message"): the conversation's Session ID. */
  readonly syncTarget?: string;
}

export interface Content {
  readonly dataMessage?: DataMessage;
  /** True when the content carries a MessageRequestResponse (accepting a message request). */
  readonly messageRequestResponse?: boolean;
  readonly sigTimestamp?: number;
}

export interface Envelope {
  readonly type: number;
  readonly source?: string;
  readonly timestamp: number;
  readonly content: Buffer;
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
  if (content.sigTimestamp !== undefined) writer.varint(15, content.sigTimestamp);
  return writer.finish();
}

function encodeDataMessage(message: DataMessage): Buffer {
  const writer = new ProtoWriter();
  if (message.body !== undefined) writer.string(1, message.body);
  if (message.timestamp !== undefined) writer.varint(7, message.timestamp);
  if (message.displayName !== undefined) writer.bytes(101, new ProtoWriter().string(1, message.displayName).finish());
  if (message.syncTarget !== undefined) writer.string(105, message.syncTarget);
  return writer.finish();
}

export function decodeContent(bytes: Buffer): Content {
  let dataMessage: DataMessage | undefined;
  let messageRequestResponse = false;
  let sigTimestamp: number | undefined;
  for (const field of readFields(bytes)) {
    if (field.field === 1) dataMessage = decodeDataMessage(lengthDelimited(field, 'Content.dataMessage'));
    else if (field.field === 10) {
      lengthDelimited(field, 'Content.messageRequestResponse');
      messageRequestResponse = true;
    } else if (field.field === 15) sigTimestamp = safeNumber(varint(field, 'Content.sigTimestamp'), 'Content.sigTimestamp');
  }
  return {
    ...(dataMessage ? { dataMessage } : {}),
    ...(messageRequestResponse ? { messageRequestResponse } : {}),
    ...(sigTimestamp !== undefined ? { sigTimestamp } : {}),
  };
}

function decodeDataMessage(bytes: Buffer): DataMessage {
  let body: string | undefined;
  let timestamp: number | undefined;
  let displayName: string | undefined;
  let syncTarget: string | undefined;
  for (const field of readFields(bytes)) {
    if (field.field === 1) body = utf8(lengthDelimited(field, 'DataMessage.body'));
    else if (field.field === 7) timestamp = safeNumber(varint(field, 'DataMessage.timestamp'), 'DataMessage.timestamp');
    else if (field.field === 101) {
      for (const inner of readFields(lengthDelimited(field, 'DataMessage.profile'))) {
        if (inner.field === 1) displayName = utf8(lengthDelimited(inner, 'LokiProfile.displayName'));
      }
    } else if (field.field === 105) syncTarget = utf8(lengthDelimited(field, 'DataMessage.syncTarget'));
  }
  return {
    ...(body !== undefined ? { body } : {}),
    ...(timestamp !== undefined ? { timestamp } : {}),
    ...(displayName !== undefined ? { displayName } : {}),
    ...(syncTarget !== undefined ? { syncTarget } : {}),
  };
}

export function encodeEnvelope(envelope: Envelope): Buffer {
  const writer = new ProtoWriter().varint(1, envelope.type);
  if (envelope.source !== undefined) writer.string(2, envelope.source);
  return writer.varint(5, envelope.timestamp).bytes(8, envelope.content).finish();
}

export function decodeEnvelope(bytes: Buffer): Envelope {
  let type: number | undefined;
  let source: string | undefined;
  let timestamp: number | undefined;
  let content: Buffer | undefined;
  for (const field of readFields(bytes)) {
    if (field.field === 1) type = safeNumber(varint(field, 'Envelope.type'), 'Envelope.type');
    else if (field.field === 2) source = utf8(lengthDelimited(field, 'Envelope.source'));
    else if (field.field === 5) timestamp = safeNumber(varint(field, 'Envelope.timestamp'), 'Envelope.timestamp');
    else if (field.field === 8) content = lengthDelimited(field, 'Envelope.content');
  }
  if (type === undefined) throw new ProtobufError('Envelope.type is missing');
  if (timestamp === undefined) throw new ProtobufError('Envelope.timestamp is missing');
  return { type, ...(source !== undefined ? { source } : {}), timestamp, content: content ?? Buffer.alloc(0) };
}

/** WebSocketMessage{ type: REQUEST, request: { verb: PUT, path: /api/v1/message, body, id: 0 } }. */
export function wrapInWebSocketRequest(envelope: Buffer): Buffer {
  const request = new ProtoWriter().string(1, MESSAGE_VERB).string(2, MESSAGE_PATH).bytes(3, envelope).varint(4, 0).finish();
  return new ProtoWriter().varint(1, WEBSOCKET_REQUEST).bytes(2, request).finish();
}

/** The request a WebSocketMessage carries; throws when it carries none. */
export function unwrapWebSocketRequest(bytes: Buffer): WebSocketRequest {
  let type: bigint | undefined;
  let request: Buffer | undefined;
  for (const field of readFields(bytes)) {
    if (field.field === 1) type = varint(field, 'WebSocketMessage.type');
    else if (field.field === 2) request = lengthDelimited(field, 'WebSocketMessage.request');
  }
  if (type !== BigInt(WEBSOCKET_REQUEST) || !request) throw new ProtobufError('not a WebSocket request message');
  let verb = '';
  let path = '';
  let body: Buffer = Buffer.alloc(0);
  let id = 0n;
  for (const field of readFields(request)) {
    if (field.field === 1) verb = utf8(lengthDelimited(field, 'WebSocketRequestMessage.verb'));
    else if (field.field === 2) path = utf8(lengthDelimited(field, 'WebSocketRequestMessage.path'));
    else if (field.field === 3) body = lengthDelimited(field, 'WebSocketRequestMessage.body');
    else if (field.field === 4) id = varint(field, 'WebSocketRequestMessage.id');
  }
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
