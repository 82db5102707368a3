/**
 * What each kind of Session app puts around a 1:1 Content: padding, Envelope and WebSocket
 * wrapper. One layout per format, each written from the source named in it; the unit spec
 * (../session-test-client.unit.spec.ts) checks the produced bytes against the same sources.
 */
import { encode } from './protobuf.ts';
import { throwawayProSig } from './crypto.ts';

export type SessionFormat = 'libsession' | 'desktop-1.17.2' | 'legacy' | 'unpadded';

export const PADDING_BLOCK = 160;
const PADDING_TERMINATOR = 0x80;

/**
 * libsession-util `src/session_protocol.cpp` `pad_message` (@996650b7/@015af4a7; block
 * `COMMUNITY_OR_1O1_MSG_PADDING` = 160 in `include/session/session_protocol.hpp`): Content ‖ 0x80 ‖
 * zeros up to the next multiple of 160 *strictly above* length + 1, i.e. 160·(⌊(L+1)/160⌋ + 1). At
 * least one zero byte follows 0x80: a Content of 159 bytes takes 320.
 */
export function padLibsession(content: Buffer): Buffer {
  const withTerminator = content.length + 1;
  const padded = Buffer.alloc(withTerminator + (PADDING_BLOCK - (withTerminator % PADDING_BLOCK)));
  content.copy(padded);
  padded[content.length] = PADDING_TERMINATOR;
  return padded;
}

/**
 * Desktop ≤ 1.17.2 `ts/session/crypto/BufferPadding.ts` `addMessagePadding` /
 * `getPaddedMessageLength` (same in v1.14.5): Content ‖ 0x80 ‖ zeros, 160·⌈(L+2)/160⌉ − 1 bytes.
 */
export function padDesktop(content: Buffer): Buffer {
  const padded = Buffer.alloc(Math.ceil((content.length + 2) / PADDING_BLOCK) * PADDING_BLOCK - 1);
  content.copy(padded);
  padded[content.length] = PADDING_TERMINATOR;
  return padded;
}

/**
 * libsession `unpad_message` (what libsession, and so Desktop ≥ 1.17.3, iOS and Android, do on
 * receipt): from the end, drop 0x00 bytes and then one 0x80; any other byte first means "not
 * padded" and the rest is kept as it is ("no client enforces it right now"). Desktop ≤ 1.17.2
 * `removeMessagePadding` is as lenient ("Letting it through for now").
 */
export function unpadLenient(padded: Buffer): Buffer {
  let size = padded.length;
  while (size > 0) {
    const byte = padded[size - 1]!;
    if (byte !== 0 && byte !== PADDING_TERMINATOR) break;
    size--;
    if (byte === PADDING_TERMINATOR) break;
  }
  return padded.subarray(0, size);
}

export interface FormatLayout {
  readonly format: SessionFormat;
  /** Where the layout comes from. */
  readonly source: string;
  readonly pad: (content: Buffer) => Buffer;
  /** WebSocketRequestMessage verb (1) and path (2), always written (proto2 presence), even when "". */
  readonly verb: string;
  readonly path: string;
  /** Envelope.sourceDevice (7), or undefined when not written. */
  readonly sourceDevice: number | undefined;
  /** Whether Envelope.proSig (11, 64 bytes) is written. */
  readonly proSig: boolean;
  /** Whether Content.sigTimestamp (15) = the envelope timestamp unless the caller says otherwise. */
  readonly sigTimestamp: boolean;
  /** Whether DataMessage.timestamp (7) carries the sent time (clients before sigTimestamp). */
  readonly dataMessageTimestamp: boolean;
  /** Whether a conversation without disappearing messages still writes expirationType 0 / expirationTimer 0. */
  readonly disappearingOffWritten: boolean;
}

const LIBSESSION: FormatLayout = {
  format: 'libsession',
  source:
    'libsession-util src/session_protocol.cpp encode_for_destination_internal (SyncOr1o1; @996650b7): ' +
    'pad_message, Envelope{type 6, sourceDevice 1, timestamp, content, proSig 64}, WebSocketMessage{REQUEST, ' +
    'request{verb "", path "", requestId 0, body}}; used by iOS (Crypto+LibSession.swift), Android ' +
    '(MessageSender.kt SessionProtocol.encodeFor1o1) and Desktop >= 1.17.3 (MessageWrapper.ts encryptFor1o1, cb8d9a7aa)',
  pad: padLibsession,
  verb: '',
  path: '',
  sourceDevice: 1,
  proSig: true,
  sigTimestamp: true,
  dataMessageTimestamp: false,
  // Desktop 1.17.17 ExpirableMessage.ts addDisappearingContentProto; iOS Message.swift
  // setDisappearingMessagesConfigurationIfNeeded: UNKNOWN and 0 when off.
  disappearingOffWritten: true,
};

export const FORMATS: Record<SessionFormat, FormatLayout> = {
  libsession: LIBSESSION,
  'desktop-1.17.2': {
    format: 'desktop-1.17.2',
    source:
      'session-desktop v1.17.2 ts/session/sending/MessageWrapper.ts (wrapContentIntoEnvelope: type, timestamp, content, ' +
      'no source for 1:1; wrapEnvelopeInWebSocketMessage: id 0, verb PUT, path /api/v1/message), ' +
      'ts/session/crypto/BufferPadding.ts addMessagePadding, ContentMessage.ts makeContentProto (sigTimestamp)',
    pad: padDesktop,
    verb: 'PUT',
    path: '/api/v1/message',
    sourceDevice: undefined,
    proSig: false,
    sigTimestamp: true,
    dataMessageTimestamp: false,
    disappearingOffWritten: true, // v1.17.2 ExpirableMessage.ts contentProto
  },
  legacy: {
    format: 'legacy',
    source:
      'session-desktop v1.14.5 (before f26133a50 "add sigtimestamp to all content message", first in v1.15.0): ' +
      'ts/session/sending/MessageSender.ts buildEnvelope/wrapEnvelope (PUT /api/v1/message, id 0), BufferPadding.ts, ' +
      'VisibleMessage.ts (dataMessage.timestamp), ExpirableMessage.ts (expiration fields only when set)',
    pad: padDesktop,
    verb: 'PUT',
    path: '/api/v1/message',
    sourceDevice: undefined,
    proSig: false,
    sigTimestamp: false,
    dataMessageTimestamp: true,
    disappearingOffWritten: false,
  },
  unpadded: {
    ...LIBSESSION,
    format: 'unpadded',
    source: `${LIBSESSION.source}; without pad_message (receivers' unpad_message accepts unpadded Content)`,
    pad: (content) => Buffer.from(content),
  },
};

export interface WrapOptions {
  /** Envelope.source = "" (field 2 present, empty), as iOS wrote before libsession (MessageWrapper.swift before 6941f7e9d). */
  readonly emptySource?: boolean;
}

/** Envelope and WebSocket wrapper around the session-protocol ciphertext, as `layout` writes them. */
export function wrap(layout: FormatLayout, envelopeTimestamp: number, ciphertext: Buffer, options: WrapOptions = {}): Buffer {
  const envelope = encode('Envelope', {
    type: 6, // SESSION_MESSAGE
    source: options.emptySource ? '' : undefined,
    timestamp: envelopeTimestamp,
    sourceDevice: layout.sourceDevice,
    content: ciphertext,
    proSig: layout.proSig ? throwawayProSig(ciphertext) : undefined,
  });
  return encode('WebSocketMessage', {
    type: 1, // REQUEST
    request: { verb: layout.verb, path: layout.path, body: envelope, requestId: 0 },
  });
}
