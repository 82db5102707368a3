import { createHash } from 'node:crypto';
import { inboundDecider, inboundStreamName } from '../../domain/inbound/decider.ts';
import { inboundBinding, type InboundBody, type InboundEvent } from '../../domain/inbound/events.ts';
import { bodyStrings } from '../../domain/shared/message-body.ts';
import { characterCount } from '../../domain/shared/text.ts';
import type { MessageSealer } from '../../infra/crypto/message-sealer.ts';
import { DataKeyGoneError, type EventStore } from '../../infra/event-store/port.ts';
import { newId } from '../../infra/ids/new-id.ts';
import type { InboundFromContact } from '../../infra/messenger/port.ts';
import type { AppsProjection } from '../../projections/apps/apps-projection.ts';
import type { RelayContext } from '../services/context.ts';
import { handleCommand, type HandleResult } from '../commands/handle-command.ts';
import type { SealingWindows } from '../services/sealing-windows.ts';
import type { Limiter } from '../services/limiter.ts';
import { actOnCodeCommand, type CodeCommandDeps, type CodeCommandOutcome } from './code-commands.ts';

export type ReceiveResult =
  | { kind: 'received'; messageId: string; appId: string; code: CodeCommandOutcome }
  | { kind: 'duplicate'; messageId: string; code: CodeCommandOutcome }
  | { kind: 'unrouted'; reason: string };

export interface InboundDeps {
  readonly store: EventStore;
  readonly apps: AppsProjection;
  readonly sealer: MessageSealer;
  /** The app's data key of the moment (apps/services/sealing-windows.ts). */
  readonly sealing: SealingWindows;
  /** What acts on `/signin CODE` and `/link CODE`. */
  readonly codes: CodeCommandDeps;
}

export const inboundDepsOf = (ctx: RelayContext, attempts: Limiter): InboundDeps => ({
  store: ctx.store,
  apps: ctx.models.apps,
  sealer: ctx.sealer,
  sealing: ctx.sealing,
  codes: { store: ctx.store, sealer: ctx.sealer, keyedHash: ctx.keyedHash, users: ctx.models.users, attempts },
});

/** The longest inbound text kept whole (characters); a longer one is cut there, with a mark. */
export const INBOUND_TEXT_LIMIT = 64_000;
const CUT_MARK = ' […]';

/** A message the messenger identified gets a stable id, so the same message is recorded once. */
const messageIdOf = (message: InboundFromContact) => (message.externalId ? externalMessageId(message, message.externalId) : newId.message());

const externalMessageId = (message: InboundFromContact, externalId: string) =>
  createHash('sha256').update(`${message.messenger}\u0000${message.to}\u0000${externalId}`).digest('hex').slice(0, 32);

/** The text as kept: whole up to INBOUND_TEXT_LIMIT characters (a messenger's own limits are far lower). */
const boundedText = (text: string): string => {
  if (text.length <= INBOUND_TEXT_LIMIT || characterCount(text) <= INBOUND_TEXT_LIMIT) return text;
  return `${Array.from(text).slice(0, INBOUND_TEXT_LIMIT - CUT_MARK.length).join('')}${CUT_MARK}`;
};

/**
 * Routes what a contact wrote to the app whose bot identity it was addressed to, and records it
 * with its contact id, text and group id sealed under a data key of its own (docs/privacy.md).
 * A disabled (or still provisioning) app-messenger receives nothing. A `/signin CODE` or `/link
 * CODE` is then acted on (code-commands.ts), and still goes to the app like any message.
 */
export const receiveInbound = async (deps: InboundDeps, message: InboundFromContact): Promise<ReceiveResult> => {
  const { store, apps, sealer } = deps;
  const appMessenger = apps.byBotAddress(message.messenger, message.to);
  if (!appMessenger) return { kind: 'unrouted', reason: `No app has the ${message.messenger} identity ${message.to}` };
  if (appMessenger.status !== 'active') return { kind: 'unrouted', reason: `The app-messenger ${appMessenger.id} is ${appMessenger.status}` };
  const app = apps.app(appMessenger.appId);
  if (!app || app.settings.status !== 'active') return { kind: 'unrouted', reason: `The app ${appMessenger.appId} is not active` };
  const messageId = messageIdOf(message);
  if (message.formerExternalId !== undefined) {
    // Recorded by an earlier Relay under the id it gave the message then: a duplicate.
    const formerId = externalMessageId(message, message.formerExternalId);
    if ((await store.readStream(inboundStreamName(formerId))).events.length > 0) return { kind: 'duplicate', messageId: formerId, code: { kind: 'none' } };
  }
  const content = boundedText(message.text);
  const groupId = message.groupId?.trim() || undefined;
  const body: InboundBody = groupId === undefined ? { c: message.contactId, t: content } : { c: message.contactId, t: content, g: groupId };
  const receive = async () => {
    const now = new Date();
    const { key, change } = deps.sealing.take(app.id, inboundStreamName(messageId), 1, now);
    let appended: HandleResult<InboundEvent> | undefined;
    try {
      appended = await handleCommand(
        store,
        inboundStreamName(messageId),
        inboundDecider,
        {
          type: 'ReceiveMessage',
          data: {
            messageId,
            appId: app.id,
            appMessengerId: appMessenger.id,
            messenger: message.messenger,
            content,
            ...(groupId !== undefined ? { groupId } : {}),
            keyId: key.id,
            sealed: sealer.seal(key.raw, inboundBinding(messageId), bodyStrings([body])),
            ...(message.timestamp !== undefined ? { timestamp: message.timestamp } : {}),
            now,
          },
        },
        { actor: 'system:gateway', correlationId: messageId },
        // A message without the messenger's own id gets a fresh id: its stream cannot exist yet.
        { newStream: message.externalId === undefined, keys: change },
      );
    } finally {
      // A duplicate appends nothing: its key was not stored either.
      deps.sealing.settled(change, appended?.ok === true && appended.events.length > 0);
    }
    return appended;
  };
  let result: Awaited<ReturnType<typeof receive>>;
  try {
    result = await receive();
  } catch (error) {
    // The window's key is gone (it ran out, or the append that was to store it failed): once more with a new one.
    if (!(error instanceof DataKeyGoneError)) throw error;
    deps.sealing.drop(error.keyIds);
    result = await receive();
  }
  if (!result.ok) return { kind: 'unrouted', reason: result.error.message };
  // A code command acts once the message is recorded; seen again (a redelivery after a crash), it finishes what it began.
  const code = await actOnCodeCommand(deps.codes, message, app.id);
  if (result.events.length === 0) return { kind: 'duplicate', messageId, code };
  return { kind: 'received', messageId, appId: app.id, code };
};
