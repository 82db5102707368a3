import { sendBatchDecider, sendBatchStreamName } from '../../domain/send-batch/decider.ts';
import { bodiesBinding, type AcceptedMessage, type OutboundMessage, type SealedBodies } from '../../domain/send-batch/message.ts';
import { bodyStrings } from '../../domain/shared/message-body.ts';
import { validateSendItem, type FailedMessage, type SendMessageInput } from '../../domain/send-batch/validate.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import { BrokerUnavailableError } from '../../infra/broker/port.ts';
import { DataKeyGoneError, type KeyChanges } from '../../infra/event-store/port.ts';
import { newId } from '../../infra/ids/new-id.ts';
import type { RelayContext } from '../services/context.ts';
import { handleCommand } from '../commands/handle-command.ts';
import { mergeKeyChanges } from '../services/sealing-windows.ts';
import type { Caller } from './auth-guard.ts';

export interface SendOutcome {
  accepted: OutboundMessage[];
  failed: FailedMessage[];
}

/** Splits a batch into valid and failed items (the interface's per-message errors). */
export const validateBatch = (items: readonly SendMessageInput[], caller: Caller): SendOutcome => {
  const accepted: OutboundMessage[] = [];
  const failed: FailedMessage[] = [];
  for (const item of items) {
    const result = validateSendItem(item, caller.appIds);
    if (result.ok) accepted.push({ messageId: newId.message(), ...result.message });
    else failed.push(result.failure);
  }
  return { accepted, failed };
};

/** Who a batch is recorded as sent by: a credential of a user, or Relay itself (`system:alerts`) for the notification app. */
export interface Sender {
  readonly credentialId: string;
  readonly userId: string;
}

/**
 * Records the accepted messages of one call as one event on a new stream, their contact ids,
 * texts and group ids sealed per app under the app's data key of the moment (its sealing
 * window), whose new uses are stored in the same transaction: when this resolves they are durable
 * together, and the queue publisher will put each on its outbound topic.
 */
export const enqueueMessages = async (ctx: RelayContext, sender: Sender, messages: OutboundMessage[]): Promise<void> => {
  // Accepted messages reach the broker through the publisher; while the broker is known to be
  // down, refuse them (503) rather than promise a delivery that cannot start.
  if (!ctx.broker.isReady()) throw new BrokerUnavailableError('The broker is not reachable');
  const byApp = new Map<string, OutboundMessage[]>();
  for (const message of messages) {
    const list = byApp.get(message.appId);
    if (list) list.push(message);
    else byApp.set(message.appId, [message]);
  }
  // A window's key may be gone (it ran out, an append that was to store it failed): once more with new keys.
  for (let attempt = 1; ; attempt++) {
    try {
      await acceptBatch(ctx, sender, byApp);
      break;
    } catch (error) {
      if (!(error instanceof DataKeyGoneError) || attempt >= 2) throw error;
      ctx.sealing.drop(error.keyIds);
    }
  }
  countAccepted(ctx, messages);
};

const acceptBatch = async (ctx: RelayContext, sender: Sender, byApp: ReadonlyMap<string, OutboundMessage[]>): Promise<void> => {
  const batchId = newId.batch();
  const now = new Date();
  const accepted: AcceptedMessage[] = [];
  const bodies: SealedBodies[] = [];
  const changes: KeyChanges[] = [];
  for (const [appId, list] of byApp) {
    const { key, change } = ctx.sealing.take(appId, sendBatchStreamName(batchId), list.length, now);
    // In the order of the event's messages under this key: no message id is repeated inside.
    const payload = bodyStrings(list.map((m) => ({ c: m.contactId, t: m.text, ...(m.groupId === undefined ? {} : { g: m.groupId }) })));
    bodies.push({ keyId: key.id, appId, sealed: ctx.sealer.seal(key.raw, bodiesBinding(batchId, key.id), payload) });
    changes.push(change);
    for (const m of list) accepted.push(m.split ? { messageId: m.messageId, appId, messenger: m.messenger, keyId: key.id, split: true } : { messageId: m.messageId, appId, messenger: m.messenger, keyId: key.id });
  }
  const { credentialId, userId } = sender;
  const keys = mergeKeyChanges(changes);
  let written = false;
  try {
    const result = await handleCommand(
      ctx.store,
      sendBatchStreamName(batchId),
      sendBatchDecider,
      { type: 'AcceptMessages', data: { batchId, credentialId, userId, messages: accepted, bodies, now } },
      { actor: credentialId.startsWith('system:') ? credentialId : `credential:${credentialId}`, correlationId: batchId },
      { newStream: true, keys },
    );
    if (!result.ok) throw new Error(result.error.message);
    written = true;
  } finally {
    ctx.sealing.settled(keys, written);
  }
};

/** One increment per messenger present in the batch. */
const countAccepted = (ctx: RelayContext, messages: readonly OutboundMessage[]) => {
  for (const messenger of MESSENGERS) {
    let count = 0;
    for (const message of messages) if (message.messenger === messenger) count++;
    if (count > 0) ctx.metrics.messagesAccepted.inc({ messenger }, count);
  }
};
