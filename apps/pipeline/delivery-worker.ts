import type { Logger } from 'pino';
import type { AttemptOutcome, KeepTimestamp, RecordAttempt } from '../../domain/delivery/commands.ts';
import { deliveryDecider, deliveryStreamName, type DeliveryState } from '../../domain/delivery/decider.ts';
import { isFinalOutcome, type DeliveryEvent } from '../../domain/delivery/events.ts';
import type { OutboundRef } from '../../domain/send-batch/message.ts';
import type { DeliveryPolicy } from '../../domain/delivery/policy.ts';
import type { Messenger } from '../../domain/shared/messengers.ts';
import { ALWAYS_HELD, RecordsNoLongerHeldError, type Broker, type ConsumedRecord, type Consumer, type HeldRecords } from '../../infra/broker/port.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import { BotIdentityMissingError, DeliveryWithdrawnError, type MessengerConnector, type OutboundDelivery } from '../../infra/messenger/port.ts';
import { isUnavailable } from '../../infra/errors/unavailable.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { handleCommand, type HandleResult } from '../commands/handle-command.ts';
import type { RelayMetrics } from '../services/metrics.ts';
import { isLegacyOutbound, type OutboundRecord } from './queue-records.ts';
import type { BodyOpener } from './sealed-bodies.ts';
import { deliverInParts } from './split-delivery.ts';
import { DELIVERY_GROUP, deliveryTopics } from '../services/topology.ts';


export interface DeliveryWorkerDeps {
  store: EventStore;
  broker: Broker;
  apps: AppsProjection;
  connectors: ReadonlyMap<Messenger, MessengerConnector>;
  bodies: BodyOpener;
  policy: DeliveryPolicy;
  metrics: RelayMetrics;
  log: Logger;
  /** Told of each message that waits for its bot's identity (for one log line per app-messenger and change). */
  waiting?: (appId: string, messenger: Messenger, reason: string) => void;
  /**
   * Outcomes of attempts this process made whose record the store did not take (it failed or
   * was unreachable), by message and attempt: when the record is handed again, the outcome is
   * recorded without asking the messenger a second time. At most UNRECORDED_KEPT, the oldest go.
   */
  unrecorded?: Map<string, AttemptOutcome>;
}

/** Outcomes kept for their record at most (a few MB at worst). */
const UNRECORDED_KEPT = 10_000;

export const FORGOTTEN_BODY = 'Message body forgotten before delivery (retention or app deleted)';

/**
 * The timestamp part `part` of a message carries (MessengerConnector.stamp): the one kept in its
 * history, or a new one the connector gives, kept there before it is used. Kept by its own append
 * on the message's stream, so the attempt's record that follows meets a newer version and is
 * decided again (with the outcome already made).
 */
const keptTimestamp = async (deps: DeliveryWorkerDeps, connector: MessengerConnector, ref: OutboundRef, attemptNo: number, state: DeliveryState, part: number, delivery: OutboundDelivery): Promise<number> => {
  const kept = state.timestamps[part];
  if (kept !== undefined) return kept;
  const timestamp = await connector.stamp!(delivery);
  let first: number | undefined;
  const result = await handleCommand(
    deps.store,
    deliveryStreamName(ref.messageId),
    deliveryDecider,
    (now): KeepTimestamp | undefined => {
      first = now.timestamps[part];
      // Finished meanwhile (another member holds the record now): nothing may be handed over.
      if (now.finished) throw new RecordsNoLongerHeldError('The message was finished by another member');
      return first === undefined ? { type: 'KeepTimestamp', data: { message: ref, attempt: attemptNo, part, timestamp, now: new Date() } } : undefined;
    },
    { actor: 'system:delivery', correlationId: ref.messageId },
  );
  if (!result.ok) throw new Error(result.error.message);
  return first ?? timestamp;
};

/** Hands one attempt to the connector of its messenger, unless its app-messenger cannot send or its body is gone. */
const attempt = async (deps: DeliveryWorkerDeps, { message, attempt: attemptNo }: OutboundRecord, keys: ReadonlyMap<string, string>, state: DeliveryState, held: HeldRecords): Promise<AttemptOutcome> => {
  const app = deps.apps.app(message.appId);
  if (!app) return { ok: false, permanent: true, reason: 'App deleted' };
  if (app.settings.status !== 'active') return { ok: false, permanent: true, reason: 'App disabled' };
  const appMessenger = deps.apps.appMessengerOf(message.appId, message.messenger);
  if (!appMessenger) return { ok: false, permanent: true, reason: `App does not use ${message.messenger}` };
  if (appMessenger.status === 'disabled') return { ok: false, permanent: true, reason: 'App messenger disabled' };
  // No identity to send from yet (not provisioned, or not bound on its daemon): no attempt can be made.
  if (appMessenger.status === 'processing' || appMessenger.address === null) return { ok: false, deferred: true, reason: 'The bot identity is not provisioned or bound yet' };
  const connector = deps.connectors.get(message.messenger);
  if (!connector) return { ok: false, permanent: false, reason: `No connector for ${message.messenger}` };
  // A store that cannot be read rejects here: the record is handed again later, no attempt is spent.
  const body = isLegacyOutbound(message) ? { c: message.contactId, t: message.text, ...(message.groupId !== undefined ? { g: message.groupId } : {}) } : await deps.bodies.open(message, keys.get(message.keyId), new Date());
  if (body === 'forgotten') return { ok: false, permanent: true, reason: FORGOTTEN_BODY };
  const delivery = {
    stillHeld: held.stillHeld,
    messageId: message.messageId,
    from: appMessenger.address,
    contactId: body.c,
    text: body.t,
    ...(body.g !== undefined ? { groupId: body.g } : {}),
    senderName: app.settings.name,
  };
  const ref = refOf(message);
  // Right before each hand-off, after every await before it: a process frozen until now finds out here.
  const handOff = async (part: number, given: OutboundDelivery): Promise<OutboundDelivery> => {
    const timestamp = connector.stamp ? await keptTimestamp(deps, connector, ref, attemptNo, state, part, given) : undefined;
    await held.confirm();
    return timestamp === undefined ? given : { ...given, timestamp };
  };
  if (!isLegacyOutbound(message) && message.split) return deliverInParts(connector, delivery, state.partsDelivered, handOff);
  try {
    const outcome = await connector.deliver(await handOff(0, delivery));
    // A message of a Relay older than privacy at rest has no sealed body to retry from: one attempt.
    if (!outcome.ok && isLegacyOutbound(message)) return { ...outcome, permanent: true, reason: `${outcome.reason} (accepted before an upgrade: not retried)` };
    return outcome;
  } catch (error) {
    // The record is no longer this process's: no attempt was made, the member holding it makes it.
    if (error instanceof RecordsNoLongerHeldError) throw error;
    if (error instanceof DeliveryWithdrawnError) throw new RecordsNoLongerHeldError(error.message, { cause: error });
    // The daemon is not there: that is no answer of the messenger, so no attempt is spent; the
    // record is handed again after a pause (docs/messengers.md).
    if (isUnavailable(error)) throw error;
    // The daemon is, but not the bot's identity on it: this message waits (deferred), the others go on.
    if (error instanceof BotIdentityMissingError) return { ok: false, deferred: true, reason: error.message };
    return { ok: false, permanent: false, reason: error instanceof Error ? error.message : String(error) };
  }
};

/** What the decider needs of a record's message (a legacy one has no sealed body: no batch, no key). */
const refOf = (message: OutboundRecord['message']): OutboundRef =>
  isLegacyOutbound(message)
    ? { messageId: message.messageId, appId: message.appId, messenger: message.messenger, batchId: '', keyId: '' }
    : message;

/**
 * Delivers one record and records the outcome as events. A record seen again (re-delivery after
 * a crash between the append and the offset commit) whose outcome is known is skipped without
 * calling the connector; a crash (or a freeze past the hold, see HeldRecords) between the
 * connector call and the append makes that attempt happen at most twice, a failed append does not
 * (the outcome is kept for the record's next handling, `unrecorded`). Nothing is handed over once
 * `held` says the record may be another member's. A final outcome releases the message's use of
 * its data key in the same transaction (the key is destroyed when every message it seals is done).
 */
export const deliverRecord = async (deps: DeliveryWorkerDeps, value: OutboundRecord, keys: ReadonlyMap<string, string>, held: HeldRecords = ALWAYS_HELD): Promise<void> => {
  const ref = refOf(value.message);
  // The outcome of this attempt, once made: recorded, never asked of the messenger again, neither
  // when the append meets a concurrent change (handleCommand decides again) nor when it fails and
  // the record is handed again (issue 48: a store cut off after the hand-off made the same process
  // hand the message twice).
  const unrecordedKey = `${ref.messageId}#${value.attempt}`;
  let made = deps.unrecorded?.get(unrecordedKey);
  let result: HandleResult<DeliveryEvent>;
  try {
    result = await handleCommand(
      deps.store,
      deliveryStreamName(ref.messageId),
      deliveryDecider,
      async (state): Promise<RecordAttempt | undefined> => {
        if (state.finished || value.attempt <= state.attemptsRecorded) return undefined;
        if (made === undefined) {
          // A copy of a deferred record, handed before the look it planned: nothing to do yet.
          if (state.deferredUntil !== null && Date.now() < Date.parse(state.deferredUntil)) return undefined;
          made = await attempt(deps, value, keys, state, held);
        }
        return { type: 'RecordAttempt', data: { message: ref, attempt: value.attempt, outcome: made, policy: deps.policy, now: new Date() } };
      },
      { actor: 'system:delivery', correlationId: ref.messageId },
      { keys: (events) => (ref.keyId !== '' && events.some(isFinalOutcome) ? { release: [ref.keyId] } : undefined) },
    );
  } catch (error) {
    if (made !== undefined && deps.unrecorded) {
      deps.unrecorded.delete(unrecordedKey);
      deps.unrecorded.set(unrecordedKey, made);
      if (deps.unrecorded.size > UNRECORDED_KEPT) deps.unrecorded.delete(deps.unrecorded.keys().next().value!);
    }
    throw error;
  }
  deps.unrecorded?.delete(unrecordedKey);
  if (!result.ok) throw new Error(result.error.message);
  // Only the outcome appended now: a skipped duplicate appends nothing.
  const messenger = ref.messenger;
  for (const event of result.events) {
    if (event.type === 'MessageDelivered') deps.metrics.messagesDelivered.inc({ messenger });
    else if (event.type === 'DeliveryAttemptFailed') deps.metrics.messagesFailed.inc({ messenger });
    else if (event.type === 'DeliveryDeferred') deps.waiting?.(ref.appId, ref.messenger, event.data.reason);
    else deps.metrics.messagesAbandoned.inc({ messenger });
  }
};

/** A state that repeats is logged again at most this often. */
const WAITING_LOG_EVERY_MS = 600_000;

/**
 * Whether a state is worth a log line: the first time it is seen for its key, when its reason
 * changes, and again at most every 10 minutes while it lasts (an expected condition is said once,
 * without a stack trace, not at every retry). At most 10,000 keys are remembered.
 */
const onceInAWhile = () => {
  const last = new Map<string, { reason: string; at: number }>();
  return (key: string, reason: string): boolean => {
    const before = last.get(key);
    const now = Date.now();
    if (before && before.reason === reason && now - before.at < WAITING_LOG_EVERY_MS) return false;
    last.delete(key);
    last.set(key, { reason, at: now });
    if (last.size > 10_000) last.delete(last.keys().next().value!);
    return true;
  };
};

/** One log line when an app-messenger's messages begin to wait for its bot identity, naming the app-messenger and not the message. */
const waitingLog = (deps: Pick<DeliveryWorkerDeps, 'apps' | 'log'>) => {
  const worth = onceInAWhile();
  return (appId: string, messenger: Messenger, reason: string) => {
    if (worth(`${appId}/${messenger}`, reason))
      deps.log.warn({ appId, appMessengerId: deps.apps.appMessengerOf(appId, messenger)?.id, messenger, reason }, 'deliveries of an app-messenger wait for its bot identity');
  };
};

// The batch's steps are functions of this module and loops, not arrows made anew in every call of
// the handler (see writeEach in infra/sqlite/group-commit.ts).
const parseRecords = (records: readonly ConsumedRecord[]): OutboundRecord[] => {
  const values: OutboundRecord[] = [];
  for (const record of records) values.push(JSON.parse(record.value) as OutboundRecord);
  return values;
};

/** The messages of the records whose bodies are sealed in the history (all but legacy ones). */
const sealedMessagesOf = (values: readonly OutboundRecord[]): OutboundRef[] => {
  const messages: OutboundRef[] = [];
  for (const value of values) if (!isLegacyOutbound(value.message)) messages.push(value.message);
  return messages;
};

/** The records of one message, one after the other. */
const deliverInTurn = async (deps: DeliveryWorkerDeps, records: readonly OutboundRecord[], keys: ReadonlyMap<string, string>, held: HeldRecords): Promise<void> => {
  for (const value of records) await deliverRecord(deps, value, keys, held);
};

/** Records a pass of the delivery worker takes, and hands to the messengers at once. */
export const DELIVERY_BATCH = 100;

export const startDeliveryWorker = (given: DeliveryWorkerDeps): Promise<Consumer> => {
  const deps: DeliveryWorkerDeps = { ...given, waiting: given.waiting ?? waitingLog(given), unrecorded: given.unrecorded ?? new Map() };
  const daemonAwayWorthSaying = onceInAWhile();
  return deps.broker.consume({
    groupId: DELIVERY_GROUP,
    topics: deliveryTopics(deps.policy),
    batchSize: DELIVERY_BATCH,
    handler: async (records, held) => {
      const values = parseRecords(records);
      // The records' data keys in one read (a key destroyed during this call still serves it: milliseconds).
      const keys = await deps.bodies.keysOf(sealedMessagesOf(values), new Date());
      // Every record's call ends before the batch fails: a batch handed again must not meet a
      // delivery of its own still in flight (the contact would get the message twice). Records of
      // one message (a second copy a publisher sent, a retry) go one after the other: the second
      // then finds the first one's outcome recorded, instead of reaching the messenger beside it.
      const byMessage = new Map<string, OutboundRecord[]>();
      for (const value of values) {
        const same = byMessage.get(value.message.messageId);
        if (same) same.push(value);
        else byMessage.set(value.message.messageId, [value]);
      }
      const runs: Promise<void>[] = [];
      for (const same of byMessage.values()) runs.push(deliverInTurn(deps, same, keys, held));
      for (const result of await Promise.allSettled(runs)) if (result.status === 'rejected') throw result.reason;
    },
    onError: (error) => {
      // This process was taken to be gone (frozen, cut off) and its records went to another member:
      // nothing of the batch was handed after that; whoever holds them now delivers them.
      if (error instanceof RecordsNoLongerHeldError) return deps.log.warn({ reason: error.message }, 'delivery batch given back: this instance no longer holds its records');
      if (!isUnavailable(error)) return deps.log.error({ err: error }, 'delivery batch failed; it will be retried');
      // A daemon that is away: said once per reason, and again every 10 minutes while it lasts.
      const reason = error instanceof Error ? error.message : String(error);
      if (daemonAwayWorthSaying('daemon', reason)) deps.log.warn({ reason }, 'a messenger daemon is unavailable; its deliveries wait and are retried without spending an attempt');
    },
  });
};
