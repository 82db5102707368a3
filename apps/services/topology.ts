import type { DeliveryPolicy } from '../../domain/delivery/policy.ts';
import { MESSENGERS } from '../../domain/shared/messengers.ts';
import type { TopicPolicy } from '../../infra/broker/port.ts';
import { prefixedNames } from '../../domain/shared/prefixed-names.ts';

/**
 * The names the delivery pipeline is built from, in one place: the broker's topics, its consumer
 * group, and the checkpoints of the subscriptions that feed it. Everything that publishes,
 * consumes, measures or documents them takes the names from here.
 */
export const topics = {
  /** First attempts of outbound messages, per messenger. */
  outbound: (messenger: string) => `outbound.${messenger}`,
  /** Attempt n+1 of a message whose attempt n failed (delayed records). */
  retry: (failedAttempt: number) => `outbound.retry.${failedAttempt}`,
  /** Attempts that waited for their bot's identity (deferred), made again at their due time. */
  deferred: 'outbound.deferred',
  /** Notices of abandoned messages (no body). */
  dead: 'outbound.dead',
  /** What contacts wrote to an app: popped by poll. */
  inbound: prefixedNames('inbound.'),
  /** Every event of a category, for analytics consumers (Kafka only). */
  events: (category: string) => `events.${category}`,
} as const;

/** The app whose inbound queue a topic is, or undefined for another topic. */
export const inboundAppOf = (topic: string): string | undefined => (topic.startsWith('inbound.') ? topic.slice('inbound.'.length) : undefined);

/** The consumer group of the delivery workers. */
export const DELIVERY_GROUP = 'delivery';

/** The topics a delivery worker consumes: first attempts and every retry stage. */
export const deliveryTopics = (policy: DeliveryPolicy): string[] => [
  ...MESSENGERS.map(topics.outbound),
  ...Array.from({ length: Math.max(0, policy.maxAttempts - 1) }, (_, i) => topics.retry(i + 1)),
  topics.deferred,
];

/** Checkpoints (in the event store) of the subscriptions of the pipeline. */
export const checkpoints = {
  /** The queue publisher: events → outbound, retry, dead and inbound records. */
  queuePublisher: 'publisher',
  /** The event-topics publisher: events → `events.<category>`. */
  eventTopics: 'event-topics',
  /** The identity provisioner: new app-messengers → bot identities. */
  identityProvisioner: 'provisioner',
  /** The subscription keeper: paid invoices → paid time on their owners' streams. */
  subscriptionKeeper: 'subscriptions',
  /** The alert dispatcher: events that alert → mails to their owners. */
  alertDispatcher: 'alerts',
  /** The group administrator, one per messenger (a daemon that is away holds back only its own): group requests → the messenger's groups. */
  groupAdministrator: (messenger: string) => `groups.${messenger}`,
} as const;

/**
 * The categories the queue publisher reads (its checkpoint moves only over these): what its lag
 * is counted in, from the (category, position) index alone.
 */
export const QUEUE_PUBLISHER_CATEGORIES = { categories: ['sendbatch', 'outbound', 'inbound', 'app'] } as const;

/**
 * The events of those categories the queue publisher turns into records or topic changes
 * (queue-publisher.ts). The others (a delivery recorded, an app's settings, ...) are left out by
 * the store's query: the publisher read and parsed every `MessageDelivered`, one per message
 * delivered, to do nothing with it.
 */
export const QUEUE_PUBLISHER_FILTER = {
  ...QUEUE_PUBLISHER_CATEGORIES,
  types: ['MessagesAccepted', 'DeliveryAttemptFailed', 'DeliveryDeferred', 'MessageAbandoned', 'InboundMessageReceived', 'AppCreated', 'AppDeleted'],
} as const;

/**
 * How the broker keeps each topic. An app's inbound queue is one partition (one ordered queue for
 * poll) kept at most the message retention: a message nobody polled by then has lost its body
 * anyway (docs/privacy.md). Dead notices are kept as long. The outbound queues and their retries
 * hold references only (no body) and are kept until consumed: a delivery due after the retention
 * must still come, find its body forgotten, and record the message abandoned. `events.<category>`
 * holds no body and is kept as the broker's own default says.
 */
export const topicPolicyOf =
  (settings: { partitions: number; retentionMs: number }) =>
  (topic: string): TopicPolicy => {
    if (inboundAppOf(topic) !== undefined) return { partitions: 1, retentionMs: settings.retentionMs };
    if (topic === topics.dead) return { partitions: settings.partitions, retentionMs: settings.retentionMs };
    return { partitions: settings.partitions };
  };
