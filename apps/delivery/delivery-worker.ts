import type { Logger } from 'pino';
import { deliveryDecider, deliveryStreamName, type AttemptOutcome, type DeliveryPolicy, type RecordAttempt } from '../../domain/outbound/delivery.ts';
import { MESSENGERS, type Messenger } from '../../domain/shared/messengers.ts';
import { topics, type Broker, type ConsumedRecord, type Consumer } from '../../infra/broker/port.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { MessengerConnector } from '../../infra/messenger/port.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { handleCommand } from '../shared/command-handler.ts';
import type { RelayMetrics } from '../shared/metrics.ts';
import type { OutboundRecord } from './outbound-record.ts';

export const DELIVERY_GROUP = 'delivery';

export interface DeliveryWorkerDeps {
  store: EventStore;
  broker: Broker;
  apps: AppsProjection;
  connectors: ReadonlyMap<Messenger, MessengerConnector>;
  policy: DeliveryPolicy;
  metrics: RelayMetrics;
  log: Logger;
}

/** The topics a delivery worker consumes: first attempts and every retry stage. */
export const deliveryTopics = (policy: DeliveryPolicy) => [
  ...MESSENGERS.map(topics.outbound),
  ...Array.from({ length: Math.max(0, policy.maxAttempts - 1) }, (_, i) => topics.retry(i + 1)),
];

/** Hands one attempt to the connector of its messenger, unless its app-messenger cannot send. */
const attempt = async (deps: DeliveryWorkerDeps, { message }: OutboundRecord): Promise<AttemptOutcome> => {
  const app = deps.apps.app(message.appId);
  if (!app) return { ok: false, permanent: true, reason: 'App deleted' };
  if (app.settings.status !== 'active') return { ok: false, permanent: true, reason: 'App disabled' };
  const appMessenger = deps.apps.appMessengerOf(message.appId, message.messenger);
  if (!appMessenger) return { ok: false, permanent: true, reason: `App does not use ${message.messenger}` };
  if (appMessenger.status === 'disabled') return { ok: false, permanent: true, reason: 'App messenger disabled' };
  if (appMessenger.status === 'processing' || appMessenger.address === null)
    return { ok: false, permanent: false, reason: 'App messenger identity is still being provisioned' };
  const connector = deps.connectors.get(message.messenger);
  if (!connector) return { ok: false, permanent: false, reason: `No connector for ${message.messenger}` };
  try {
    return await connector.deliver({
      messageId: message.messageId,
      from: appMessenger.address,
      contactId: message.contactId,
      text: message.text,
      ...(message.groupId !== undefined ? { groupId: message.groupId } : {}),
    });
  } catch (error) {
    return { ok: false, permanent: false, reason: error instanceof Error ? error.message : String(error) };
  }
};

/**
 * Delivers one record and records the outcome as events. A record seen again (re-delivery after
 * a crash between the append and the offset commit) whose outcome is known is skipped without
 * calling the connector; a crash between the connector call and the append makes that attempt
 * happen at most twice.
 */
export const deliverRecord = async (deps: DeliveryWorkerDeps, record: ConsumedRecord): Promise<void> => {
  const value = JSON.parse(record.value) as OutboundRecord;
  const result = await handleCommand(
    deps.store,
    deliveryStreamName(value.message.messageId),
    deliveryDecider,
    async (state): Promise<RecordAttempt | undefined> => {
      if (state.finished || value.attempt <= state.attemptsRecorded) return undefined;
      const outcome = await attempt(deps, value);
      return { type: 'RecordAttempt', data: { message: value.message, attempt: value.attempt, outcome, policy: deps.policy, now: new Date() } };
    },
    { actor: 'system:delivery', correlationId: value.message.messageId },
  );
  if (!result.ok) throw new Error(result.error.message);
  // Only the outcome appended now: a skipped duplicate appends nothing.
  const messenger = value.message.messenger;
  for (const event of result.events) {
    if (event.type === 'MessageDelivered') deps.metrics.messagesDelivered.inc({ messenger });
    else if (event.type === 'DeliveryAttemptFailed') deps.metrics.messagesFailed.inc({ messenger });
    else deps.metrics.messagesAbandoned.inc({ messenger });
  }
};

export const startDeliveryWorker = (deps: DeliveryWorkerDeps): Promise<Consumer> =>
  deps.broker.consume({
    groupId: DELIVERY_GROUP,
    topics: deliveryTopics(deps.policy),
    batchSize: 25,
    handler: async (records) => {
      await Promise.all(records.map((record) => deliverRecord(deps, record)));
    },
    onError: (error) => deps.log.error({ err: error }, 'delivery batch failed; it will be retried'),
  });
