import { createHash } from 'node:crypto';
import { decideReceiveMessage, inboundStreamName } from '../../domain/inbound/decider.ts';
import { isDomainError } from '../../domain/shared/errors.ts';
import type { EventStore } from '../../infra/event-store/port.ts';
import type { InboundFromContact } from '../../infra/messenger/port.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import { newId } from '../shared/ids.ts';

export type ReceiveResult =
  | { kind: 'received'; messageId: string; appId: string }
  | { kind: 'duplicate'; messageId: string }
  | { kind: 'unrouted'; reason: string };

/** A message the messenger identified gets a stable id, so the same message is recorded once. */
const messageIdOf = (message: InboundFromContact) =>
  message.externalId
    ? createHash('sha256').update(`${message.messenger}\u0000${message.to}\u0000${message.externalId}`).digest('hex').slice(0, 32)
    : newId.message();

/**
 * Routes what a contact wrote to the app whose bot identity it was addressed to, and records it.
 * A disabled (or still provisioning) app-messenger receives nothing.
 */
export const receiveInbound = async (store: EventStore, apps: AppsProjection, message: InboundFromContact): Promise<ReceiveResult> => {
  const appMessenger = apps.byBotAddress(message.messenger, message.to);
  if (!appMessenger) return { kind: 'unrouted', reason: `No app has the ${message.messenger} identity ${message.to}` };
  if (appMessenger.status !== 'active') return { kind: 'unrouted', reason: `The app-messenger ${appMessenger.id} is ${appMessenger.status}` };
  const app = apps.app(appMessenger.appId);
  if (!app || app.settings.status !== 'active') return { kind: 'unrouted', reason: `The app ${appMessenger.appId} is not active` };
  const messageId = messageIdOf(message);
  const stream = inboundStreamName(messageId);
  const { version } = await store.readStream(stream);
  const decision = decideReceiveMessage(
    {
      type: 'ReceiveMessage',
      data: {
        messageId,
        appId: app.id,
        appMessengerId: appMessenger.id,
        messenger: message.messenger,
        contactId: message.contactId,
        content: message.text,
        ...(message.timestamp !== undefined ? { timestamp: message.timestamp } : {}),
        ...(message.groupId !== undefined ? { groupId: message.groupId } : {}),
        now: new Date(),
      },
    },
    version > 0n,
  );
  if (isDomainError(decision)) return { kind: 'unrouted', reason: decision.message };
  if (decision.length === 0) return { kind: 'duplicate', messageId };
  await store.appendToStream(
    stream,
    decision.map((e) => ({ type: e.type, data: e.data, metadata: { actor: `system:gateway`, correlationId: messageId } })),
    { expectedVersion: 'no_stream' },
  );
  return { kind: 'received', messageId, appId: app.id };
};
