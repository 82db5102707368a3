import { BrokerUnavailableError } from '../../infra/broker/port.ts';
import { decideSendMessages, sendBatchStreamName } from '../../domain/outbound/send-batch.ts';
import type { OutboundMessage } from '../../domain/outbound/message.ts';
import { validateSendItem, type FailedMessage, type SendMessageInput } from '../../domain/outbound/validate.ts';
import { isDomainError } from '../../domain/shared/errors.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import type { RelayContext } from '../shared/context.ts';
import { newId } from '../shared/ids.ts';
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

/**
 * Records the accepted messages of one call as one event on a new stream: when this resolves
 * they are durable together, and the publisher will put each on its outbound topic.
 */
export const enqueueMessages = async (ctx: RelayContext, caller: Caller, messages: OutboundMessage[]): Promise<void> => {
  // Accepted messages reach the broker through the publisher; while the broker is known to be
  // down, refuse them (503) rather than promise a delivery that cannot start.
  if (!ctx.broker.isReady()) throw new BrokerUnavailableError('The broker is not reachable');
  const batchId = newId.batch();
  const decision = decideSendMessages(
    { type: 'SendMessages', data: { batchId, credentialId: caller.credential.credentialId, userId: caller.credential.userId, messages, now: new Date() } },
    false,
  );
  if (isDomainError(decision)) throw new Error(decision.message);
  await ctx.store.appendToStream(
    sendBatchStreamName(batchId),
    decision.map((e) => ({ type: e.type, data: e.data, metadata: { actor: `credential:${caller.credential.credentialId}`, correlationId: batchId } })),
    { expectedVersion: 'no_stream' },
  );
  countAccepted(ctx, messages);
};

/** One increment per messenger present in the batch. */
const countAccepted = (ctx: RelayContext, messages: readonly OutboundMessage[]) => {
  for (const messenger of MESSENGERS) {
    let count = 0;
    for (const message of messages) if (message.messenger === messenger) count++;
    if (count > 0) ctx.metrics.messagesAccepted.inc({ messenger }, count);
  }
};
