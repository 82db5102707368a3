/**
 * The traffic of the scale bench's history, spread over the simulated year: what Relay records for
 * each message, written as Relay writes it.
 * - A send (POST /api/v1/messages/send, apps/api/send-messages.ts): `MessagesAccepted` on a new
 *   `sendbatch-*` stream, the items validated as the route does, their contact ids and texts sealed
 *   (format s2) under a new data key of the app bound to the batch, the key put in the same append;
 *   then per message the delivery worker's outcome on `outbound-*` (a first attempt that fails now
 *   and then: `DeliveryAttemptFailed` with its retry, then `MessageDelivered`), each final outcome
 *   releasing the message's use of the key in its append (apps/pipeline/delivery-worker.ts).
 * - An inbound message (apps/pipeline/inbound-receiver.ts): `InboundMessageReceived` on a new
 *   `inbound-*` stream, sealed under a key of its own; a poll took it (on the embedded broker a poll
 *   records no event; it releases the key).
 * - The body shredder's sweep (apps/pipeline/body-shredder.ts): `BodiesForgotten` on a new `shred-*`
 *   stream destroying the keys that are used up. At this history's pace (a message every few
 *   seconds) each sweep of Relay's one-second shredder finds one batch's key, so each is one sweep.
 * Not written: the Kafka claims of polls (`RecordsPopped`), alerts, and `events.<category>` records.
 */
import { deliveryDecider, deliveryStreamName } from '../../../domain/delivery/decider.ts';
import { defaultDeliveryPolicy } from '../../../domain/delivery/policy.ts';
import { inboundDecider, inboundStreamName } from '../../../domain/inbound/decider.ts';
import { inboundBinding } from '../../../domain/inbound/events.ts';
import { sendBatchDecider, sendBatchStreamName } from '../../../domain/send-batch/decider.ts';
import { bodiesBinding, type AcceptedMessage } from '../../../domain/send-batch/message.ts';
import { validateSendItem } from '../../../domain/send-batch/validate.ts';
import { bodyStrings } from '../../../domain/shared/message-body.ts';
import { MESSENGERS, type Messenger } from '../../../domain/shared/messengers.ts';
import { shredDecider, shredStreamName } from '../../../domain/shred/decider.ts';
import type { MessageSealer } from '../../../infra/crypto/message-sealer.ts';
import { newId } from '../../../infra/ids/new-id.ts';
import { uuidV7 } from '../../../infra/ids/uuid-v7.ts';
import { seeded } from './plan.ts';
import type { BuiltApp } from './population.ts';
import { decideAndAppend, inPool, type HistoryClock, type Writable } from './writer.ts';

export interface HistoryDeps {
  readonly store: Writable;
  readonly sealer: MessageSealer;
  readonly clock: HistoryClock;
  /** How long a key may live (MESSAGE_RETENTION_HOURS), from the real clock: the vault checks keys against it. */
  readonly retentionMs: number;
  readonly concurrency: number;
}

const TEXTS = [
  'Your order has shipped and should arrive on Thursday.',
  'Reminder: the meeting starts in 15 minutes.',
  'Thanks! We received your message and will answer shortly.',
  'Your verification code is 481516. It expires in 10 minutes.',
  'The nightly backup finished without errors (2,341 files, 14.2 GB).',
  'Alert: disk usage on db-3 is above 90 % for the last 5 minutes. Please have a look at the volume and the retention of the logs before it fills up.',
];

/** A contact id each messenger accepts (infra/messenger/messenger-rules.ts). */
export const contactOf = (messenger: Messenger, n: number): string =>
  messenger === 'signal' ? `+1555${String(1_000_000 + (n % 9_000_000)).padStart(7, '0')}` : messenger === 'simplex' ? String(100 + (n % 1_000_000)) : `05${(n % 1_000_000).toString(16).padStart(64, '0')}`;

/**
 * Writes traffic units (a send of 1–9 messages, or an inbound message) to the given apps until the
 * store's head reaches `targetHead` (checked between rounds of `round` units), their times spread
 * over the clock. Returns how many units it wrote.
 */
export const writeHistory = async (deps: HistoryDeps, apps: readonly BuiltApp[], targetHead: bigint, seed: number): Promise<number> => {
  if (apps.length === 0) return 0;
  const random = seeded(seed);
  let head = await deps.store.headPosition();
  if (head >= targetHead) return 0;
  // About 5.5 events per unit: aim the spread of times at the units needed.
  const expected = Math.max(1, Math.ceil(Number(targetHead - head) / 5.5));
  let unit = 0;
  while (head < targetHead) {
    // Rounds of at most 2,000 units, fewer near the target: it is overshot by less than a round.
    const round = Math.min(2000, Math.max(deps.concurrency, Math.ceil(Number(targetHead - head) / 5.5)));
    const units = Array.from({ length: round }, (_, i) => ({ n: unit + i, app: apps[Math.floor(random() * apps.length)]!, roll: random() }));
    await inPool(units, deps.concurrency, (u) => (u.roll < 0.65 ? sendUnit(deps, u.app, u.roll, deps.clock.at(u.n % expected, expected)) : inboundUnit(deps, u.app, u.roll, deps.clock.at(u.n % expected, expected))));
    unit += round;
    head = await deps.store.headPosition();
  }
  return unit;
};

const after = (at: Date, ms: number) => new Date(at.getTime() + ms);

const sendUnit = async (deps: HistoryDeps, app: BuiltApp, roll: number, at: Date): Promise<void> => {
  const { store, sealer } = deps;
  const messenger = MESSENGERS[Math.floor(roll * 1000) % 3]!;
  const count = 1 + (Math.floor(roll * 10_000) % 9);
  const items = Array.from({ length: count }, (_, i) => ({ appId: app.appId, messenger, contactId: contactOf(messenger, Math.floor(roll * 1e9) + i), message: TEXTS[(i + count) % TEXTS.length]! }));
  const messages = items.map((item) => {
    const validated = validateSendItem(item, [app.appId]);
    if (!validated.ok) throw new Error(`scale history: ${validated.failure.error}`);
    return { messageId: newId.message(), ...validated.message };
  });
  const batchId = newId.batch();
  const key = sealer.newKey();
  const subject = sendBatchStreamName(batchId);
  const payload = bodyStrings(messages.map((m) => ({ c: m.contactId, t: m.text })));
  const accepted: AcceptedMessage[] = messages.map((m) => ({ messageId: m.messageId, appId: app.appId, messenger: m.messenger, keyId: key.id }));
  await decideAndAppend(
    store,
    subject,
    sendBatchDecider,
    { type: 'AcceptMessages', data: { batchId, credentialId: app.credentialId, userId: app.userId, messages: accepted, bodies: [{ keyId: key.id, appId: app.appId, sealed: sealer.seal(key.raw, bodiesBinding(batchId, key.id), payload) }], now: at } },
    { actor: `credential:${app.credentialId}`, correlationId: batchId },
    { at, keys: { put: [{ id: key.id, scope: app.appId, subject, wrapped: key.wrapped, uses: count, expiresAt: new Date(Date.now() + deps.retentionMs) }] } },
  );
  await Promise.all(
    accepted.map(async (m, i) => {
      const ref = { ...m, batchId };
      const stream = deliveryStreamName(m.messageId);
      const metadata = { actor: 'system:delivery', correlationId: m.messageId };
      const release = (events: readonly { type: string }[]) => (events.some((e) => e.type === 'MessageDelivered' || e.type === 'MessageAbandoned') ? { release: [key.id] } : undefined);
      let state = deliveryDecider.initialState();
      let version = 0n;
      let attempt = 1;
      // One message in 30 finds the messenger down at its first attempt (Relay retries after 1 s).
      if ((Math.floor(roll * 1e6) + i) % 30 === 0) {
        const failed = await decideAndAppend(
          store,
          stream,
          deliveryDecider,
          { type: 'RecordAttempt', data: { message: ref, attempt, outcome: { ok: false, permanent: false, reason: 'The messenger daemon did not answer' }, policy: defaultDeliveryPolicy, now: after(at, 60) } },
          metadata,
          { at: after(at, 60), keys: release },
        );
        state = failed.state;
        version = failed.version;
        attempt = 2;
      }
      const when = after(at, attempt === 1 ? 40 : 1100);
      await decideAndAppend(store, stream, deliveryDecider, { type: 'RecordAttempt', data: { message: ref, attempt, outcome: { ok: true }, policy: defaultDeliveryPolicy, now: when } }, metadata, {
        at: when,
        state,
        version,
        keys: release,
      });
    }),
  );
  await forget(deps, [{ keyId: key.id, appId: app.appId, subject }], after(at, 2000));
};

const inboundUnit = async (deps: HistoryDeps, app: BuiltApp, roll: number, at: Date): Promise<void> => {
  const { store, sealer } = deps;
  const messenger = MESSENGERS[Math.floor(roll * 1000) % 3]!;
  const messageId = newId.message();
  const key = sealer.newKey();
  const subject = inboundStreamName(messageId);
  const content = TEXTS[Math.floor(roll * 100) % TEXTS.length]!;
  await decideAndAppend(
    store,
    subject,
    inboundDecider,
    {
      type: 'ReceiveMessage',
      data: {
        messageId,
        appId: app.appId,
        appMessengerId: app.messengers[messenger].id,
        messenger,
        content,
        keyId: key.id,
        sealed: sealer.seal(key.raw, inboundBinding(messageId), bodyStrings([{ c: contactOf(messenger, Math.floor(roll * 1e9)), t: content }])),
        now: at,
      },
    },
    { actor: 'system:gateway', correlationId: messageId },
    { at, keys: { put: [{ id: key.id, scope: app.appId, subject, wrapped: key.wrapped, uses: 1, expiresAt: new Date(Date.now() + deps.retentionMs) }] } },
  );
  // A poll returned it: it releases the key after answering (no event on the embedded broker).
  await store.keys.release([key.id]);
  await forget(deps, [{ keyId: key.id, appId: app.appId, subject }], after(at, 1500));
};

/** One sweep of the body shredder over keys that are used up. */
const forget = async (deps: HistoryDeps, keys: Array<{ keyId: string; appId: string; subject: string }>, at: Date): Promise<void> => {
  const shredId = uuidV7();
  const forgotten = keys.map((k) => ({ ...k, reason: 'finished' as const }));
  await decideAndAppend(deps.store, shredStreamName(shredId), shredDecider, { type: 'ForgetBodies', data: { shredId, keys: forgotten, now: at } }, { actor: 'system:shredder', correlationId: shredId }, {
    at,
    keys: (events) => (events.length > 0 ? { destroy: keys.map((k) => k.keyId) } : undefined),
  });
};
