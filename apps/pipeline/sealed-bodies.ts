import type { SendBatchEvent } from '../../domain/send-batch/events.ts';
import { bodiesBinding, type MessageBody, type OutboundRef } from '../../domain/send-batch/message.ts';
import { bodiesOfStrings } from '../../domain/shared/message-body.ts';
import { sendBatchStreamName } from '../../domain/send-batch/decider.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { EventStore, RecordedEvent } from '../../infra/event-store/port.ts';

/** The body of an outbound message, or `forgotten` when its data key is gone (retention, app deleted). */
export type OpenedBody = MessageBody | 'forgotten';

export interface BodyOpener {
  /**
   * The data keys of the messages about to be delivered, from the vault, in one read: a key absent
   * from the map is gone. Rejects with the store's error when it cannot be read.
   */
  keysOf(refs: readonly OutboundRef[], now: Date): Promise<ReadonlyMap<string, string>>;
  /**
   * The body of a message, given its key as `keysOf` just read it (undefined: the key is gone).
   * Rejects with the store's error when it cannot be read (a delivery then waits, it is no attempt).
   */
  open(ref: OutboundRef, wrapped: string | undefined, now: Date): Promise<OpenedBody>;
  /**
   * A send batch's event as the queue publisher of this thread read it: its sealed bodies are kept
   * (sealed) for a while, so that delivering its messages need not read the event again.
   */
  remember(event: RecordedEvent): void;
}

export interface BodyOpenerOptions {
  /**
   * Opened payloads kept in memory (one per app of a batch, up to 50 messages each; default 32:
   * a batch's messages are delivered within a call or two, and each one kept outlives the young
   * generation, so that 256 of them grew the pipeline thread's heap by about 30 MB under load),
   * and for how long (remembered events too).
   */
  readonly maxCached?: number;
  /** Send batch events kept as the publisher saw them (sealed), at most this many and about this many bytes (1 MiB), of batches of at most this many messages (5). */
  readonly maxRemembered?: number;
  readonly maxRememberedBytes?: number;
  readonly maxRememberedMessages?: number;
  readonly cacheMs?: number;
}

/**
 * Opens the sealed bodies of send batches for the delivery worker: the batch's event as the queue
 * publisher of this thread saw it (or else from the store), its data key from the vault, one
 * decryption per app of a batch. The messages of a batch
 * are delivered together, so an opened payload is kept a little while (bounded in count and time)
 * for the others, but never longer than its key: every handler call of the delivery worker asks the
 * vault which of its records' keys still exist (one read), and a key that is gone (retention, app
 * deleted) drops its payloads from memory at once.
 */
export const createBodyOpener = (store: EventStore, sealer: MessageSealer, options: BodyOpenerOptions = {}): BodyOpener => {
  const maxCached = options.maxCached ?? 32;
  const maxRemembered = options.maxRemembered ?? 1024;
  const maxRememberedBytes = options.maxRememberedBytes ?? 1024 * 1024;
  const maxRememberedMessages = options.maxRememberedMessages ?? 5;
  const cacheMs = options.cacheMs ?? 10_000;
  /** Opened payloads by batch and key. */
  const cache = new Map<string, { at: number; bodies: Promise<Map<string, MessageBody>> }>();

  /** Send batch events the publisher saw, by batch id (sealed: nothing opened until delivered), and about how many bytes they hold. */
  const remembered = new Map<string, { at: number; event: SendBatchEvent; bytes: number }>();
  let rememberedBytes = 0;
  const forget = (batchId: string): void => {
    const entry = remembered.get(batchId);
    if (entry === undefined) return;
    remembered.delete(batchId);
    rememberedBytes -= entry.bytes;
  };

  /** Unwrapped key material by key id (a key seals a whole period of an app's batches), dropped when the vault no longer has the key. */
  const unwrapped = new Map<string, { wrapped: string; raw: Buffer }>();
  const material = (keyId: string, wrapped: string): Buffer => {
    let entry = unwrapped.get(keyId);
    if (entry === undefined || entry.wrapped !== wrapped) {
      entry = { wrapped, raw: sealer.unwrap(wrapped) };
      unwrapped.set(keyId, entry);
      while (unwrapped.size > maxCached) unwrapped.delete(unwrapped.keys().next().value!);
    }
    return entry.raw;
  };

  const acceptedEvent = async (batchId: string, at: number): Promise<SendBatchEvent | undefined> => {
    const seen = remembered.get(batchId);
    if (seen !== undefined && at - seen.at <= cacheMs) return seen.event;
    const { events } = await store.readStream(sendBatchStreamName(batchId));
    return events.find((event) => event.type === 'MessagesAccepted') as unknown as SendBatchEvent | undefined;
  };

  const load = async (ref: OutboundRef, wrapped: string, at: number): Promise<Map<string, MessageBody>> => {
    const accepted = await acceptedEvent(ref.batchId, at);
    const sealed = accepted?.data.bodies.find((body) => body.keyId === ref.keyId);
    if (!accepted || !sealed) throw new Error(`The sealed bodies of key ${ref.keyId} are not in batch ${ref.batchId}`);
    const opened = sealer.open(material(ref.keyId, wrapped), bodiesBinding(ref.batchId, ref.keyId), sealed.sealed);
    // The payload lists the bodies in the order of the event's messages under this key (JSON in events of Relay 0.1 before format s2).
    const payload = opened.format === 'strings' ? bodiesOfStrings(opened.strings) : (opened.value as MessageBody[]);
    const ids = accepted.data.messages.filter((message) => message.keyId === ref.keyId).map((message) => message.messageId);
    if (!Array.isArray(payload) || payload.length !== ids.length) throw new Error(`The sealed bodies of key ${ref.keyId} in batch ${ref.batchId} do not match its messages`);
    return new Map(ids.map((id, i) => [id, payload[i]!]));
  };

  return {
    async keysOf(refs, now) {
      const ids = [...new Set(refs.map((ref) => ref.keyId))];
      return ids.length === 0 ? new Map() : store.keys.get(ids, now);
    },

    async open(ref, wrapped, now) {
      if (wrapped === undefined) {
        cache.delete(`${ref.batchId}/${ref.keyId}`);
        unwrapped.delete(ref.keyId);
        return 'forgotten';
      }
      const at = now.getTime();
      // A key seals the batches of one app and second: a payload is one batch's part under it.
      const payloadId = `${ref.batchId}/${ref.keyId}`;
      let entry = cache.get(payloadId);
      if (!entry || at - entry.at > cacheMs) {
        const loading = { at, bodies: load(ref, wrapped, at) };
        entry = loading;
        cache.set(payloadId, loading);
        loading.bodies.catch(() => cache.get(payloadId) === loading && cache.delete(payloadId));
        while (cache.size > maxCached) cache.delete(cache.keys().next().value!);
      }
      const body = (await entry.bodies).get(ref.messageId);
      if (!body) throw new Error(`Message ${ref.messageId} is not in its sealed bodies`);
      return body;
    },

    remember(event) {
      if (event.type !== 'MessagesAccepted') return;
      const accepted = event as unknown as SendBatchEvent;
      // A larger batch is read once for all its messages anyway; keeping it would only promote
      // large objects to the old generation (measured: the pipeline thread's heap 48 → 85 MB).
      if (accepted.data.messages.length > maxRememberedMessages) return;
      const bytes = accepted.data.bodies.reduce((sum, body) => sum + body.sealed.length, 0) + 150 * accepted.data.messages.length;
      forget(accepted.data.batchId);
      remembered.set(accepted.data.batchId, { at: Date.now(), event: accepted, bytes });
      rememberedBytes += bytes;
      while (remembered.size > maxRemembered || rememberedBytes > maxRememberedBytes) forget(remembered.keys().next().value!);
    },
  };
};
