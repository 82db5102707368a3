import type { SendBatchEvent } from '../../domain/send-batch/events.ts';
import { bodiesBinding, type MessageBody, type OutboundRef } from '../../domain/send-batch/message.ts';
import { bodiesOfStrings } from '../../domain/shared/message-body.ts';
import { sendBatchStreamName } from '../../domain/send-batch/decider.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import type { EventStore } from '../../infra/event-store/port.ts';

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
}

export interface BodyOpenerOptions {
  /** Opened payloads kept in memory (one per app of a batch, up to 50 messages each), and for how long. */
  readonly maxCached?: number;
  readonly cacheMs?: number;
}

/**
 * Opens the sealed bodies of send batches for the delivery worker: the batch's event from the
 * store, its data key from the vault, one decryption per app of a batch. The messages of a batch
 * are delivered together, so an opened payload is kept a little while (bounded in count and time)
 * for the others, but never longer than its key: every handler call of the delivery worker asks the
 * vault which of its records' keys still exist (one read), and a key that is gone (retention, app
 * deleted) drops its payloads from memory at once.
 */
export const createBodyOpener = (store: EventStore, sealer: MessageSealer, options: BodyOpenerOptions = {}): BodyOpener => {
  const maxCached = options.maxCached ?? 256;
  const cacheMs = options.cacheMs ?? 10_000;
  /** Opened payloads by batch and key. */
  const cache = new Map<string, { at: number; bodies: Promise<Map<string, MessageBody>> }>();

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

  const load = async (ref: OutboundRef, wrapped: string): Promise<Map<string, MessageBody>> => {
    const { events } = await store.readStream(sendBatchStreamName(ref.batchId));
    const accepted = events.find((event) => event.type === 'MessagesAccepted') as unknown as SendBatchEvent | undefined;
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
        const loading = { at, bodies: load(ref, wrapped) };
        entry = loading;
        cache.set(payloadId, loading);
        loading.bodies.catch(() => cache.get(payloadId) === loading && cache.delete(payloadId));
        while (cache.size > maxCached) cache.delete(cache.keys().next().value!);
      }
      const body = (await entry.bodies).get(ref.messageId);
      if (!body) throw new Error(`Message ${ref.messageId} is not in its sealed bodies`);
      return body;
    },
  };
};
