/**
 * Reading a stored 1:1 message the way today's apps do: libsession-util `src/session_protocol.cpp`
 * `decode_envelope` (@996650b7 / @015af4a7; Desktop ≥ 1.17.3, iOS, Android call it), then
 * Desktop's content check `shouldProcessContentMessage` (v1.17.17 `ts/receiver/common.ts`).
 *
 * - WebSocketMessage: only `request.body` is read; a missing request or body is refused; verb,
 *   path, type and id are not looked at (iOS `MessageWrapper.unwrap` and Android
 *   `MessageWrapper.kt` read the body the same way). They are reported, for specs on what Relay sends.
 * - Envelope: must parse as proto2 (type and timestamp are required); the type's value is not
 *   checked ("We do not parse the envelope type anymore"); `source`, if present, is "" or 66 hex
 *   characters; `content` must be present; `proSig`, if present, must be 64 bytes.
 * - content: decrypted and its signature checked (./crypto.ts `decryptIncoming`), unpadded
 *   leniently (./formats.ts `unpadLenient`), parsed as Content with every proto2 required field.
 * - sigTimestamp: missing or 0 = a legacy client, accepted; otherwise it must equal the envelope
 *   timestamp (non-community rule).
 */
import { decode, type ProtoObject } from './protobuf.ts';
import { decryptIncoming, edToMontgomery, type Identity } from './crypto.ts';
import { unpadLenient } from './formats.ts';
import { kindOf, type ContentKind } from './content.ts';

export interface OpenedMessage {
  readonly sender: string;
  /** DataMessage.body ('' when absent). */
  readonly text: string;
  readonly kind: ContentKind | 'unknown';
  readonly envelopeTimestamp: number;
  readonly sigTimestamp?: number;
  /** Content.dataMessage.profile.displayName. */
  readonly displayName?: string;
  readonly expirationType?: number;
  readonly expirationTimer?: number;
  readonly sourceDevice?: number;
  /** Envelope.source when present ("" from pre-libsession iOS/Android). */
  readonly envelopeSource?: string;
  readonly proSigLength?: number;
  /** WebSocketRequestMessage verb / path as written (undefined when the field is absent). */
  readonly verb?: string;
  readonly path?: string;
  /** Length of the decrypted, still padded plaintext, and of the Content after unpadding. */
  readonly paddedLength: number;
  readonly contentLength: number;
  /** The decoded Content, for specs that look further. */
  readonly content: ProtoObject;
}

export function openMessage(data: Buffer, own: Identity): OpenedMessage | string {
  let ws: ProtoObject;
  let envelope: ProtoObject;
  try {
    ws = decode('WebSocketMessage', data);
  } catch (error) {
    return `websocket message does not parse: ${(error as Error).message}`;
  }
  const request = ws.request as ProtoObject | undefined;
  if (!request) return 'websocket message has no request';
  const body = request.body as Buffer | undefined;
  if (!body) return 'websocket request has no body';
  try {
    envelope = decode('Envelope', body);
  } catch (error) {
    return `envelope does not parse: ${(error as Error).message}`;
  }
  const source = envelope.source as string | undefined;
  if (source !== undefined && source.length !== 0 && source.length !== 66) return `envelope source has unexpected size (${source.length})`;
  const ciphertext = envelope.content as Buffer | undefined;
  if (!ciphertext) return 'envelope has no content';
  const proSig = envelope.proSig as Buffer | undefined;
  if (proSig && proSig.length !== 64) return `envelope proSig has wrong size (${proSig.length})`;

  const decrypted = decryptIncoming(ciphertext, own);
  if ('error' in decrypted) return decrypted.error;
  const unpadded = unpadLenient(decrypted.padded);
  let content: ProtoObject;
  try {
    content = decode('Content', unpadded);
  } catch (error) {
    return `content does not parse: ${(error as Error).message}`;
  }

  const envelopeTimestamp = envelope.timestamp as number;
  const sigTimestamp = content.sigTimestamp as number | undefined;
  if (envelopeTimestamp && sigTimestamp && sigTimestamp !== envelopeTimestamp) return 'sigTimestamp differs from the envelope timestamp';

  const dataMessage = content.dataMessage as ProtoObject | undefined;
  const displayName = (dataMessage?.profile as ProtoObject | undefined)?.displayName as string | undefined;
  return {
    sender: `05${edToMontgomery(decrypted.senderEd).toString('hex')}`,
    text: (dataMessage?.body as string | undefined) ?? '',
    kind: kindOf(content),
    envelopeTimestamp,
    ...(sigTimestamp !== undefined ? { sigTimestamp } : {}),
    ...(displayName !== undefined ? { displayName } : {}),
    ...(content.expirationType !== undefined ? { expirationType: content.expirationType as number } : {}),
    ...(content.expirationTimer !== undefined ? { expirationTimer: content.expirationTimer as number } : {}),
    ...(envelope.sourceDevice !== undefined ? { sourceDevice: envelope.sourceDevice as number } : {}),
    ...(source !== undefined ? { envelopeSource: source } : {}),
    ...(proSig ? { proSigLength: proSig.length } : {}),
    ...(request.verb !== undefined ? { verb: request.verb as string } : {}),
    ...(request.path !== undefined ? { path: request.path as string } : {}),
    paddedLength: decrypted.padded.length,
    contentLength: unpadded.length,
    content,
  };
}
