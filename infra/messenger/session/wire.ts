import { createHash, randomBytes } from 'node:crypto';
import { isSessionId, sessionIdPublicKey, type SessionIdentity } from './identity.ts';
import { openSealed, padMessage, sealForRecipient, SessionCryptoError, unpadMessage } from './message-crypto.ts';
import {
  decodeContent,
  decodeEnvelope,
  encodeContent,
  encodeEnvelope,
  ENVELOPE_SESSION_MESSAGE,
  FLAG_EXPIRATION_TIMER_UPDATE,
  unwrapWebSocketRequest,
  wrapInWebSocketRequest,
  type Content,
  type ExpirationType,
} from './messages.ts';
import { ProtobufError } from './protobuf.ts';

/**
 * What a one-to-one message is on the wire, both ways: Content → padding → signature and sealed
 * box → Envelope → WebSocket request message; the storage server keeps those bytes (base64 in
 * JSON) in the recipient's namespace 0. Facts: ../shared/notes/session-protocol.md §5 and §14.
 */

/** A conversation's disappearing-messages setting, as a contact's app last sent it. */
export interface Expiration {
  readonly type: ExpirationType;
  /** Seconds; 0 when messages do not disappear. */
  readonly timer: number;
}

export interface OutgoingText {
  readonly sender: SessionIdentity;
  readonly recipient: string;
  readonly text: string;
  /** Network-adjusted send time, ms: the envelope's timestamp and the content's sigTimestamp. */
  readonly timestamp: number;
  readonly displayName?: string;
  /** The conversation's disappearing-messages setting, carried so the reply disappears as the contact's messages do. */
  readonly expiration?: Expiration;
}

const PRO_SIG_BYTES = 64;
const SOURCE_DEVICE = 1;

/**
 * The bytes of a text message as Relay stores them: today's layout (the `PUT /api/v1/message`
 * wrapper and 160n − 1 padding, which every client reads) with what libsession adds to the
 * envelope, `sourceDevice` 1 and a 64-byte `proSig` (random bytes, as libsession writes for an
 * account without Session Pro).
 */
export function buildTextMessage(message: OutgoingText): Buffer {
  const expiration = message.expiration !== undefined && message.expiration.type !== 0 && message.expiration.timer > 0 ? message.expiration : undefined;
  const content = encodeContent({
    dataMessage: {
      body: message.text,
      timestamp: message.timestamp,
      ...(message.displayName !== undefined ? { displayName: message.displayName, profileUpdatedSeconds: Math.floor(message.timestamp / 1000) } : {}),
    },
    ...(expiration ? { expirationType: expiration.type, expirationTimer: expiration.timer } : {}),
    sigTimestamp: message.timestamp,
  });
  const sealed = sealForRecipient(message.sender, sessionIdPublicKey(message.recipient), padMessage(content));
  return wrapInWebSocketRequest(
    encodeEnvelope({ type: ENVELOPE_SESSION_MESSAGE, timestamp: message.timestamp, sourceDevice: SOURCE_DEVICE, content: sealed, proSig: randomBytes(PRO_SIG_BYTES) }),
  );
}

/**
 * What a contact's app may send that carries no text for the bot. `control`: signals that are
 * not messages (typing, read receipts, screenshots, deletions, call set-up, message-request
 * answers, the disappearing-messages setting, the bot's own copies); `unsupported`: a message a
 * person wrote that Relay cannot hand on (it is counted and logged, never silently lost).
 */
export const CONTROL_KINDS = ['typing', 'read-receipt', 'data-extraction', 'unsend', 'message-request-response', 'expiration-update', 'own-copy'] as const;
export const UNSUPPORTED_KINDS = ['attachment', 'voice-note', 'reaction', 'call', 'group-invite', 'group-update', 'community-invite', 'empty'] as const;
export type ControlKind = (typeof CONTROL_KINDS)[number];
export type UnsupportedKind = (typeof UNSUPPORTED_KINDS)[number];

export type OpenedIncoming =
  | {
      readonly kind: 'text';
      readonly sender: string;
      readonly text: string;
      readonly timestamp: number;
      /** Identifies the message whatever its wrapper: the sender and a digest of what the sender signed (which holds the timestamp). */
      readonly replayKey: string;
      readonly displayName?: string;
      readonly expiration?: Expiration;
      /** Parts of the message Relay could not hand on beside its text (an attachment with a caption). */
      readonly lost?: readonly UnsupportedKind[];
    }
  | { readonly kind: 'control'; readonly sender: string; readonly what: ControlKind; readonly expiration?: Expiration }
  | { readonly kind: 'unsupported'; readonly sender: string; readonly what: UnsupportedKind; readonly replayKey: string; readonly expiration?: Expiration }
  /** Something that fails a check: not for this identity, forged, malformed. */
  | { readonly kind: 'rejected'; readonly reason: string };

/**
 * Opens what the storage server gave for the bot's namespace 0, as current Session clients do:
 * any WebSocket request wrapper (its verb and path are not read), an envelope of type
 * SESSION_MESSAGE, a sealed box that opens with the bot's key, the sender's signature over
 * payload, sender key and the bot's key, padding read leniently, and a sigTimestamp equal to the
 * envelope's timestamp unless it is missing or 0 (a legacy client: session-desktop
 * `ts/receiver/common.ts`).
 */
export function openIncoming(own: SessionIdentity, data: Buffer): OpenedIncoming {
  try {
    const envelope = decodeEnvelope(unwrapWebSocketRequest(data).body);
    if (envelope.type !== ENVELOPE_SESSION_MESSAGE) return { kind: 'rejected', reason: `envelope type ${envelope.type} is not a one-to-one message` };
    if (envelope.content.byteLength === 0) return { kind: 'rejected', reason: 'the envelope is empty' };
    const opened = openSealed(own, envelope.content);
    const content = decodeContent(unpadMessage(opened.padded));
    if (content.sigTimestamp !== undefined && content.sigTimestamp !== 0 && content.sigTimestamp !== envelope.timestamp) {
      return { kind: 'rejected', reason: 'sigTimestamp differs from the envelope timestamp' };
    }
    const sender = opened.senderSessionId;
    if (!isSessionId(sender)) return { kind: 'rejected', reason: 'the sender is not a Session ID' };
    return classify(own, sender, content, envelope.timestamp, replayKeyOf(sender, opened.padded, opened.signature));
  } catch (error) {
    if (error instanceof ProtobufError || error instanceof SessionCryptoError) return { kind: 'rejected', reason: error.message };
    throw error;
  }
}

function classify(own: SessionIdentity, sender: string, content: Content, timestamp: number, replayKey: string): OpenedIncoming {
  const data = content.dataMessage;
  if (data?.syncTarget !== undefined || sender === own.sessionId) return { kind: 'control', sender, what: 'own-copy' };
  // The conversation's setting rides on what a person sends (messages and setting changes), not on signals.
  const expiration = data ? expirationOf(content) : undefined;
  const withExpiration = expiration ? { expiration } : {};
  if (data === undefined) {
    if (content.others?.includes('call')) return { kind: 'unsupported', sender, what: 'call', replayKey };
    if (content.messageRequestResponse) return { kind: 'control', sender, what: 'message-request-response' };
    const other = content.others?.[0];
    if (other === 'typing' || other === 'read-receipt' || other === 'data-extraction' || other === 'unsend') return { kind: 'control', sender, what: other };
    return { kind: 'unsupported', sender, what: 'empty', replayKey };
  }
  const lost: UnsupportedKind[] = [];
  if (data.voiceNote) lost.push('voice-note');
  else if (data.attachments !== undefined) lost.push('attachment');
  if (data.reaction) lost.push('reaction');
  if (data.groupUpdate === 'invite') lost.push('group-invite');
  else if (data.groupUpdate === 'other') lost.push('group-update');
  if (data.communityInvitation) lost.push('community-invite');
  if (data.body !== undefined && data.body !== '') {
    return {
      kind: 'text',
      sender,
      text: data.body,
      timestamp,
      replayKey,
      ...(data.displayName !== undefined ? { displayName: data.displayName } : {}),
      ...withExpiration,
      ...(lost.length > 0 ? { lost } : {}),
    };
  }
  if (lost.length > 0) return { kind: 'unsupported', sender, what: lost[0]!, replayKey, ...withExpiration };
  if (data.flags !== undefined && (data.flags & FLAG_EXPIRATION_TIMER_UPDATE) !== 0) return { kind: 'control', sender, what: 'expiration-update', ...withExpiration };
  return { kind: 'unsupported', sender, what: 'empty', replayKey, ...withExpiration };
}

function expirationOf(content: Content): Expiration {
  const type = content.expirationType === 1 || content.expirationType === 2 ? content.expirationType : 0;
  const timer = type === 0 ? 0 : Math.min(content.expirationTimer ?? 0, 0xffffffff);
  return { type: timer === 0 ? 0 : type, timer };
}

/**
 * The same message however it is wrapped: a storage node can re-wrap a message it holds (another
 * verb, path or proSig gives other bytes and another hash), but not change what its sender signed.
 * The signature is a deterministic function of the sender's secret key and the padded plaintext,
 * so this digest cannot be recomputed from a guessed text: it identifies without revealing.
 */
function replayKeyOf(sender: string, padded: Buffer, signature: Buffer): string {
  return createHash('sha256').update(sender).update(padded).update(signature).digest('base64url');
}
