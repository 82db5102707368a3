import { isSessionId, sessionIdPublicKey, type SessionIdentity } from './identity.ts';
import { openSealed, padMessage, sealForRecipient, SessionCryptoError, unpadMessage } from './message-crypto.ts';
import {
  decodeContent,
  decodeEnvelope,
  encodeContent,
  encodeEnvelope,
  ENVELOPE_SESSION_MESSAGE,
  MESSAGE_PATH,
  unwrapWebSocketRequest,
  wrapInWebSocketRequest,
} from './messages.ts';
import { ProtobufError } from './protobuf.ts';

/**
 * What a one-to-one text message is on the wire, both ways: Content → padding → signature and
 * sealed box → Envelope → WebSocket request message; the storage server keeps those bytes (base64
 * in JSON) in the recipient's namespace 0.
 */
export interface OutgoingText {
  readonly sender: SessionIdentity;
  readonly recipient: string;
  readonly text: string;
  /** Network-adjusted send time, ms: the envelope's timestamp and the content's sigTimestamp. */
  readonly timestamp: number;
  readonly displayName?: string;
}

export function buildTextMessage(message: OutgoingText): Buffer {
  const content = encodeContent({
    dataMessage: {
      body: message.text,
      timestamp: message.timestamp,
      ...(message.displayName !== undefined ? { displayName: message.displayName } : {}),
    },
    sigTimestamp: message.timestamp,
  });
  const sealed = sealForRecipient(message.sender, sessionIdPublicKey(message.recipient), padMessage(content));
  return wrapInWebSocketRequest(encodeEnvelope({ type: ENVELOPE_SESSION_MESSAGE, timestamp: message.timestamp, content: sealed }));
}

export type OpenedIncoming =
  | { readonly kind: 'text'; readonly sender: string; readonly text: string; readonly timestamp: number; readonly displayName?: string }
  /** Something valid Relay does not hand on: the bot's own sync copy, a message request answer, a message with no text. */
  | { readonly kind: 'ignored'; readonly sender: string; readonly reason: string }
  /** Something that fails a check: not for this identity, forged, malformed. */
  | { readonly kind: 'rejected'; readonly reason: string };

/**
 * Opens what the storage server gave for the bot's namespace 0, with the receive-side checks of
 * current Session clients: an envelope of type SESSION_MESSAGE, a sealed box that opens with the
 * bot's key, the sender's signature over payload, sender key and the bot's key, and a
 * sigTimestamp equal to the envelope's timestamp when the content has one (clients still accept
 * content without it, from older apps).
 */
export function openIncoming(own: SessionIdentity, data: Buffer): OpenedIncoming {
  try {
    const request = unwrapWebSocketRequest(data);
    if (request.path !== MESSAGE_PATH) return { kind: 'rejected', reason: `unexpected request path ${JSON.stringify(request.path.slice(0, 64))}` };
    const envelope = decodeEnvelope(request.body);
    if (envelope.type !== ENVELOPE_SESSION_MESSAGE) return { kind: 'rejected', reason: `envelope type ${envelope.type} is not a one-to-one message` };
    if (envelope.content.byteLength === 0) return { kind: 'rejected', reason: 'the envelope is empty' };
    const opened = openSealed(own, envelope.content);
    const content = decodeContent(unpadMessage(opened.padded));
    if (content.sigTimestamp !== undefined && content.sigTimestamp !== envelope.timestamp) {
      return { kind: 'rejected', reason: 'sigTimestamp differs from the envelope timestamp' };
    }
    const sender = opened.senderSessionId;
    const dataMessage = content.dataMessage;
    if (dataMessage?.syncTarget !== undefined || sender === own.sessionId) return { kind: 'ignored', sender, reason: 'a copy of a message this identity sent' };
    if (dataMessage?.body === undefined || dataMessage.body === '') {
      return { kind: 'ignored', sender, reason: content.messageRequestResponse ? 'a message request response' : 'no text' };
    }
    if (!isSessionId(sender)) return { kind: 'rejected', reason: 'the sender is not a Session ID' };
    return {
      kind: 'text',
      sender,
      text: dataMessage.body,
      timestamp: envelope.timestamp,
      ...(dataMessage.displayName !== undefined ? { displayName: dataMessage.displayName } : {}),
    };
  } catch (error) {
    if (error instanceof ProtobufError || error instanceof SessionCryptoError) return { kind: 'rejected', reason: error.message };
    throw error;
  }
}
